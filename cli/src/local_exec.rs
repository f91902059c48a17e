//! The `local-exec` provisioner, as Terraform's: `command` run by `interpreter` (default
//! `/bin/sh -c`) in `working_dir` with `environment` added to gpustack's own, its output
//! streamed line by line under the resource's address; `quiet` hides the command, a secret in
//! the arguments hides the command and the output.

use gpustack_protocol::{Diagnostic, ProvisionRequest, Provisioner, Value};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

pub(crate) struct LocalExec;

fn text(config: &Value, name: &str) -> Option<String> {
    match config.as_object().and_then(|o| o.get(name)) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The arguments of the command line: the interpreter's, then the command.
fn command_line(config: &Value) -> Result<Vec<String>, String> {
    let command = text(config, "command")
        .filter(|c| !c.is_empty())
        .ok_or("command must be a non-empty string")?;
    let mut line = match config.as_object().and_then(|o| o.get("interpreter")) {
        Some(Value::List(items)) if !items.is_empty() => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("interpreter holds {other}, not a string")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Null | Value::List(_)) | None => vec!["/bin/sh".to_owned(), "-c".to_owned()],
        Some(other) => {
            return Err(format!(
                "interpreter must be a list of strings, not {other}"
            ));
        }
    };
    line.push(command);
    Ok(line)
}

#[async_trait::async_trait]
impl Provisioner for LocalExec {
    async fn provision(&self, request: ProvisionRequest) -> Vec<Diagnostic> {
        let config = &request.config;
        let line = match command_line(config) {
            Ok(line) => line,
            Err(e) => return vec![Diagnostic::error("Invalid local-exec provisioner", e)],
        };
        let quiet = matches!(
            config.as_object().and_then(|o| o.get("quiet")),
            Some(Value::Bool(true))
        );
        let say = |text: &str| (request.output)(text);
        if request.sensitive {
            say("(output suppressed due to sensitive value in config)");
        } else if quiet {
            say("(command suppressed by quiet = true)");
        } else {
            say(&format!("Executing: {line:?}"));
        }
        let mut command = tokio::process::Command::new(&line[0]);
        command
            .args(&line[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = text(config, "working_dir").filter(|d| !d.is_empty()) {
            command.current_dir(dir);
        }
        if let Some(Value::Object(environment)) =
            config.as_object().and_then(|o| o.get("environment"))
        {
            for (name, value) in environment {
                let value = match value {
                    Value::String(s) => s.clone(),
                    Value::Null => continue,
                    other => other.to_string(),
                };
                command.env(name, value);
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return vec![Diagnostic::error(
                    "local-exec provisioner error",
                    format!("cannot run {}: {e}", line[0]),
                )];
            }
        };
        // Both streams, line by line as they come, in one place; the last lines kept for
        // the error.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let mut ticker = tokio::time::interval(std::time::Duration::from_millis(200));
        let status = loop {
            tokio::select! {
                line = rx.recv() => match line {
                    Some(line) => {
                        let line = gpustack_protocol::secrets::scrub(&line).into_owned();
                        if !request.sensitive {
                            say(&line);
                        }
                        tail.push_back(line);
                        if tail.len() > 20 {
                            tail.pop_front();
                        }
                    }
                    None => break child.wait().await,
                },
                _ = ticker.tick() => {
                    if request.stop.is_set() {
                        let _ = child.kill().await;
                        return vec![Diagnostic::error(
                            "local-exec provisioner error",
                            "interrupted: the command was stopped",
                        )];
                    }
                }
            }
        };
        match status {
            Ok(status) if status.success() => vec![],
            Ok(status) => {
                let output = if request.sensitive {
                    String::new()
                } else {
                    format!(
                        " Output: {}",
                        tail.iter().cloned().collect::<Vec<_>>().join("\n")
                    )
                };
                let shown = if request.sensitive || quiet {
                    "the command".to_owned()
                } else {
                    format!("'{}'", line.last().cloned().unwrap_or_default())
                };
                let code = status
                    .code()
                    .map_or_else(|| "a signal".to_owned(), |c| format!("exit status {c}"));
                vec![Diagnostic::error(
                    "local-exec provisioner error",
                    format!("Error running {shown}: {code}.{output}"),
                )]
            }
            Err(e) => vec![Diagnostic::error(
                "local-exec provisioner error",
                format!("waiting for {}: {e}", line[0]),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, Value)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn the_interpreter_runs_the_command() {
        assert_eq!(
            command_line(&config(&[("command", Value::string("echo hi"))])).unwrap(),
            ["/bin/sh", "-c", "echo hi"]
        );
        let python = config(&[
            ("command", Value::string("print(1)")),
            (
                "interpreter",
                Value::List(vec![Value::string("python3"), Value::string("-c")]),
            ),
        ]);
        assert_eq!(
            command_line(&python).unwrap(),
            ["python3", "-c", "print(1)"]
        );
        assert!(command_line(&config(&[])).is_err());
    }
}
