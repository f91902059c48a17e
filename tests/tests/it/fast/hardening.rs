//! Hostile and careless input, case by case (docs/security.md names each test): nothing shows
//! a secret, no input crashes, hangs or exhausts memory, and no promise a link can break.

use gpustack_tests::{gpustack_command, gpustack_env, stderr, stdout};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = within(dir, args, env, Duration::from_secs(120));
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

/// Runs gpustack, killing it when it outlives `limit` (a hang is a failure, not a stuck suite).
fn within(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut child = gpustack_command(dir, args, env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes: a child blocked on a full pipe would look like a hang.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("gpustack {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn stack(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const PASSPHRASE: &str = "CorrectHorseBatteryStaple99";

/// Case 1: A typo in GPUSTACK_ENCRYPTION is located there, and its excerpt, which would show the
/// passphrase on the line above, is replaced by the location and "(sensitive value)".
#[test]
fn a_syntax_error_in_the_encryption_environment_shows_where_never_the_passphrase() {
    let dir = stack(&[("main.hcl", "output \"x\" {\n  value = 1\n}\n")]);
    for typo in ["  iterations = 6x\n", "  passphrase2 = \"x\" oops\n"] {
        let settings = format!(
            "key_provider \"pbkdf2\" \"k\" {{\n  passphrase = \"{PASSPHRASE}\"\n{typo}}}\nmethod \"aes_gcm\" \"m\" {{\n  keys = key_provider.pbkdf2.k\n}}\nstate {{\n  method = method.aes_gcm.m\n}}\n"
        );
        let (code, out, err) = run(dir.path(), &["plan"], &[("GPUSTACK_ENCRYPTION", &settings)]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            !err.contains(PASSPHRASE) && !out.contains(PASSPHRASE),
            "{err}"
        );
        assert!(err.contains("GPUSTACK_ENCRYPTION:3:"), "{err}");
        assert!(err.contains("(sensitive value)"), "{err}");
    }
}

/// Case 2: A value of the wrong kind for a sensitive variable, from --var, the environment or a
/// variables file, is reported without being quoted or shown.
#[test]
fn a_sensitive_variables_wrong_value_is_never_quoted() {
    let dir = stack(&[
        (
            "main.hcl",
            "variable \"n\" {\n  type      = number\n  sensitive = true\n}\n\nvariable \"l\" {\n  type      = list(string)\n  sensitive = true\n  default   = []\n}\n",
        ),
        ("bad.tfvars", "n = Hunter2zz\n"),
        ("broken.tfvars", "n = \"Hunter2zz\nl = [1]\n"),
    ]);
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 5] = [
        (&["validate", "--var", "n=Hunter2zz"], &[]),
        (&["validate", "--var", "n=1", "--var", "l=[Hunter2zz]"], &[]),
        (&["validate"], &[("GPUSTACK_VAR_n", "Hunter2zz")]),
        (&["validate", "--var-file", "bad.tfvars"], &[]),
        (&["validate", "--var-file", "broken.tfvars"], &[]),
    ];
    for (args, env) in cases {
        let (code, out, err) = run(dir.path(), args, env);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            !err.contains("Hunter2") && !out.contains("Hunter2"),
            "{args:?}: {err}"
        );
    }
}

/// Case 3: `validation` on a sensitive variable decides on the value (the sensitive mark on the
/// condition's result is no error), and a failing rule's message never prints the value.
#[test]
fn validation_of_a_sensitive_variable_decides_and_never_prints_the_value() {
    let dir = stack(&[(
        "main.hcl",
        "variable \"token\" {\n  type      = string\n  sensitive = true\n  validation {\n    condition     = length(var.token) >= 12\n    error_message = \"The token must have 12 characters.\"\n  }\n  validation {\n    condition     = !startswith(var.token, \"x\")\n    error_message = \"The token ${var.token} must not start with x.\"\n  }\n}\n\noutput \"ok\" {\n  value = true\n}\n",
    )]);
    let (code, out, err) = run(dir.path(), &["plan", "--var", "token=averylongtoken"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = run(dir.path(), &["plan", "--var", "token=short1"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("The token must have 12 characters."), "{err}");
    assert!(!err.contains("short1"), "{err}");
    let (code, _, err) = run(
        dir.path(),
        &["plan", "--var", "token=xylophone-secret"],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("The error message included a sensitive value, so it will not be displayed."),
        "{err}"
    );
    assert!(!err.contains("xylophone"), "{err}");
}

/// Case 4: Nested aliases ("billion laughs") and deep block nesting stop at a named limit, as the
/// evaluation's other limits do, in yamldecode and the kubernetes provider's decoder alike.
#[test]
fn yaml_aliases_and_deep_nesting_stop_at_a_named_limit() {
    let mut laughs = vec![
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"
            .to_owned(),
    ];
    for i in 1..12u8 {
        let (prev, cur) = ((b'a' + i - 1) as char, (b'a' + i) as char);
        laughs.push(format!("{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]"));
    }
    let deep: String = (0..5000)
        .map(|i| format!("{}k:\n", "  ".repeat(i)))
        .chain(std::iter::once(format!("{}v\n", "  ".repeat(5000))))
        .collect();
    let dir = stack(&[
        ("laughs.yaml", &(laughs.join("\n") + "\n")),
        ("deep.yaml", &deep),
        (
            "main.tf",
            "terraform {\n  required_providers {\n    kubernetes = {\n      source = \"hashicorp/kubernetes\"\n    }\n  }\n}\n\nvariable \"file\" {\n  type = string\n}\n\noutput \"yaml\" {\n  value = length(yamldecode(file(\"${path.module}/${var.file}\")))\n}\n\noutput \"manifest\" {\n  value = length(provider::kubernetes::manifest_decode_multi(file(\"${path.module}/${var.file}\")))\n}\n",
        ),
    ]);
    for (file, limit) in [
        ("laughs.yaml", "expands to more than 1000000 values"),
        ("deep.yaml", "nests more than 200 levels deep"),
    ] {
        let (code, out, err) = run(
            dir.path(),
            &["validate", "--var", &format!("file={file}")],
            &[],
        );
        assert_eq!(code, 1, "{file}: {out}{err}");
        assert_eq!(err.matches(limit).count(), 2, "{file}: {err}");
    }
}

/// Case 4, for JSON: `jsondecode` of an array nested thousands of levels deep stops at the
/// evaluation's nesting limit, named, instead of recursing until the stack overflows.
#[test]
fn jsondecode_of_deep_nesting_stops_at_a_named_limit() {
    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let dir = stack(&[
        ("deep.json", &deep),
        (
            "main.hcl",
            "output \"json\" {\n  value = length(jsondecode(file(\"${path.module}/deep.json\")))\n}\n",
        ),
    ]);
    let (code, out, err) = run(dir.path(), &["validate"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("JSON nested more than 200 levels deep"),
        "{err}"
    );
}

/// Case 5: file(), filebase64() and a terraform_remote_state path on a device or a FIFO are refused
/// before anything is read, naming what is there.
#[cfg(unix)]
#[test]
fn file_reads_refuse_devices_and_fifos_before_reading() {
    let dir = stack(&[]);
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (path, kind) in [
        ("/dev/zero", "character device"),
        ("/dev/urandom", "character device"),
        (fifo.to_str().unwrap(), "FIFO"),
    ] {
        for function in ["file", "filebase64", "filesha256"] {
            std::fs::write(
                dir.path().join("main.hcl"),
                format!("output \"x\" {{\n  value = {function}(\"{path}\")\n}}\n"),
            )
            .unwrap();
            let (code, out, err) = run(dir.path(), &["validate"], &[]);
            assert_eq!(code, 1, "{function}({path}): {out}{err}");
            assert!(
                err.contains(&format!("it is a {kind}, not a regular file")),
                "{function}({path}): {err}"
            );
        }
        std::fs::remove_file(dir.path().join("main.hcl")).unwrap();
        std::fs::write(
            dir.path().join("main.tf"),
            format!(
                "data \"terraform_remote_state\" \"c\" {{\n  backend = \"local\"\n  config = {{\n    path = \"{path}\"\n  }}\n}}\n"
            ),
        )
        .unwrap();
        let (code, out, err) = run(dir.path(), &["plan"], &[]);
        assert_eq!(code, 1, "remote state {path}: {out}{err}");
        assert!(
            err.contains(&format!("it is a {kind}, not a regular file")),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("main.tf")).unwrap();
    }
}

/// Case 6: A syntax error past column 65,535 of a minified line is rendered, the line cut around
/// it with its true line and column.
#[test]
fn a_syntax_error_far_along_a_long_line_is_shown_cut_around_it() {
    let value = "a".repeat(70_000);
    let dir = stack(&[(
        "main.tf.json",
        &format!("{{\"output\": {{\"x\": {{\"value\": \"{value}\" ,,}}}}}}"),
    )]);
    let (code, out, err) = run(dir.path(), &["validate"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("main.tf.json:1:70032"), "{err}");
    assert!(err.contains("…aaaa"), "{err}");
    assert!(err.lines().all(|l| l.chars().count() < 300), "{err}");
}

/// Case 7: A chain of tens of thousands of locals, each naming the one before, validates and plans:
/// nothing in load, graph or evaluation recurses once per link.
#[test]
fn a_chain_of_thirty_thousand_locals_validates_and_plans() {
    let mut text = String::from("locals {\n  l0 = 1\n");
    for i in 1..30_000 {
        text.push_str(&format!("  l{i} = local.l{}\n", i - 1));
    }
    text.push_str("}\n\noutput \"x\" {\n  value = local.l29999\n}\n");
    let dir = stack(&[("main.hcl", &text)]);
    for command in ["validate", "plan", "graph"] {
        let (code, out, err) = run(dir.path(), &[command], &[]);
        assert_eq!(code, 0, "{command}: {err}");
        assert!(!out.is_empty(), "{command}");
    }
}

/// Case 9: A first plan saved to a file holds its secrets' digests but not their key: the key is
/// in the state the plan writes first, and no guess of a secret from a dictionary confirms
/// against the plan file alone, whatever in it is tried as the key.
#[test]
fn no_plan_file_confirms_a_guess_of_a_secret() {
    use hmac::Mac;
    let secret = "dragon2024";
    let dir = stack(&[
        (
            "main.hcl",
            "variable \"password\" {\n  type      = string\n  sensitive = true\n}\n\nresource \"local_file\" \"f\" {\n  filename          = \"out.txt\"\n  sensitive_content = var.password\n}\n",
        ),
        ("secret.txt", secret),
    ]);
    let (code, out, err) = run(
        dir.path(),
        &[
            "plan",
            "--out",
            "first.plan",
            "--var",
            &format!("password={secret}"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let plan = std::fs::read_to_string(dir.path().join("first.plan")).unwrap();
    assert!(
        !plan.contains("digest_key"),
        "the plan file holds the digest key"
    );
    let digests: Vec<&str> = plan
        .match_indices("hmac-sha256:")
        .map(|(at, prefix)| &plan[at + prefix.len()..at + prefix.len() + 64])
        .collect();
    assert!(!digests.is_empty(), "the plan holds no digest to test");
    // Every run of hex digits in the file, tried as a key; and no key at all.
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    for word in plan.split(|c: char| !c.is_ascii_hexdigit()) {
        if word.len() >= 16 && word.len() % 2 == 0 {
            keys.push(
                (0..word.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&word[i..i + 2], 16).unwrap())
                    .collect(),
            );
        }
    }
    let dictionary = common_passwords();
    assert_eq!(dictionary.len(), 1000);
    assert!(dictionary.iter().any(|p| p == secret));
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    for guess in &dictionary {
        let canonical = serde_json::Value::String(guess.clone()).to_string();
        for key in &keys {
            let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
            mac.update(canonical.as_bytes());
            let digest = hex(&mac.finalize().into_bytes());
            assert!(!digests.contains(&digest.as_str()), "{guess} confirmed");
        }
        use sha2::Digest;
        let plain = hex(&sha2::Sha256::digest(canonical.as_bytes()));
        assert!(
            !digests.contains(&plain.as_str()),
            "{guess} confirmed unkeyed"
        );
    }
    // The plan applies: its digests are keyed by the state it wrote first.
    let (code, out, err) = run(
        dir.path(),
        &[
            "apply",
            "first.plan",
            "--var",
            &format!("password={secret}"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        secret
    );
}

/// A thousand common passwords: words, names and keyboard runs with the suffixes people add.
fn common_passwords() -> Vec<String> {
    let words = [
        "password",
        "dragon",
        "monkey",
        "letmein",
        "qwerty",
        "football",
        "baseball",
        "master",
        "shadow",
        "sunshine",
        "princess",
        "welcome",
        "admin",
        "login",
        "iloveyou",
        "trustno1",
        "superman",
        "batman",
        "michael",
        "jessica",
        "charlie",
        "hunter",
        "ranger",
        "thomas",
        "tigger",
        "soccer",
        "hockey",
        "killer",
        "george",
        "summer",
        "winter",
        "freedom",
        "whatever",
        "secret",
        "cookie",
        "flower",
        "pepper",
        "ginger",
        "orange",
        "banana",
        "abc123",
        "qwerty123",
        "passw0rd",
        "starwars",
        "matrix",
        "zxcvbnm",
        "asdfgh",
        "1q2w3e4r",
        "changeme",
        "default",
    ];
    let suffixes = [
        "", "1", "12", "123", "1234", "!", "2023", "2024", "2025", "01", "69", "99", "007", "!!",
        "#1", "2000", "11", "22", "@1", "_1",
    ];
    words
        .iter()
        .flat_map(|w| suffixes.iter().map(move |s| format!("{w}{s}")))
        .collect()
}

/// Case 11: A terraform_remote_state whose outputs are not an object is an error naming the field,
/// never read as "no outputs".
#[test]
fn a_terraform_state_of_the_wrong_shape_is_an_error_naming_the_field() {
    let dir = stack(&[
        (
            "tf.tfstate",
            r#"{"version": 4, "serial": 1, "lineage": "l", "outputs": []}"#,
        ),
        (
            "main.tf",
            "data \"terraform_remote_state\" \"c\" {\n  backend = \"local\"\n  config = {\n    path = \"tf.tfstate\"\n  }\n}\n\noutput \"x\" {\n  value = data.terraform_remote_state.c.outputs\n}\n",
        ),
    ]);
    let (code, out, err) = run(dir.path(), &["plan"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("tf.tfstate: the field outputs is sequence, expected a map"),
        "{err}"
    );
}

/// Case 12: Characters that act on a terminal, in a multi-line value from anywhere, are escaped in
/// plan text and Markdown (where no value closes the code fence either); JSON keeps them
/// JSON-escaped.
#[test]
fn control_characters_in_values_are_escaped_in_plan_text_and_markdown() {
    let dir = stack(&[(
        "main.tf",
        "resource \"terraform_data\" \"x\" {\n  input = \"line one\\nline\\u001b[2A\\u001b[2K two\\rX\\u202e\\n````\\n<b>hi</b>\\n\"\n}\n",
    )]);
    for args in [&["plan"][..], &["plan", "--markdown"]] {
        let (code, out, err) = run(dir.path(), args, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\r') && !out.contains('\u{202e}'),
            "{args:?}: {out:?}"
        );
        assert!(
            out.contains("line\\u001b[2A\\u001b[2K two\\rX\\u202e"),
            "{out}"
        );
        if args.len() == 2 {
            assert!(out.contains("\n`````diff\n"), "{out}");
        }
    }
    let (code, out, err) = run(dir.path(), &["plan", "--json"], &[]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let input = &json["resource_changes"][0]["change"]["after"]["input"];
    assert!(input.as_str().unwrap().contains("\u{1b}[2A"), "{input}");
    // A diagnostic quoting a value escapes it too.
    let dir = stack(&[(
        "main.tf",
        "output \"x\" {\n  value = tonumber(\"4\\u001b[2J2\")\n}\n",
    )]);
    let output = gpustack_env(dir.path(), &["validate"], &[]);
    let err = stderr(&output);
    assert!(
        !err.contains('\u{1b}') && err.contains("\\u001b[2J"),
        "{err:?}"
    );
}

/// Round 2: a passphrase written anywhere on a line, inside a one-line block or in minified
/// JSON, is kept out of a syntax error's excerpt as one on a line of its own is.
#[test]
fn a_syntax_error_never_shows_a_passphrase_written_anywhere_on_a_line() {
    let one_line_block = format!(
        "terraform {{\n  encryption {{\n    key_provider \"pbkdf2\" \"k\" {{ passphrase = \"{PASSPHRASE}\" }}\n    method \"aes_gcm\" \"m\" {{ keys = key_provider.pbkdf2.k }} oops\n  }}\n}}\n"
    );
    let minified = |rest: &str| {
        format!(
            "{{\"terraform\": {{\"encryption\": {{\"key_provider\": {{\"pbkdf2\": {{\"k\": {{\"passphrase\": \"{PASSPHRASE}\"{rest}}}}}}}}}}}}}\n"
        )
    };
    for (name, text) in [
        ("main.hcl", one_line_block),
        // A template error on the passphrase's line, and a JSON syntax error.
        ("main.tf.json", minified(", \"iterations\": \"${1 +}\"")),
        ("main.tf.json", minified(",")),
    ] {
        let dir = stack(&[(name, &text)]);
        let (code, out, err) = run(dir.path(), &["validate"], &[]);
        assert_eq!(code, 1, "{text}: {out}{err}");
        assert!(
            !err.contains(PASSPHRASE) && !out.contains(PASSPHRASE),
            "{text}: {err}"
        );
        assert!(err.contains("(sensitive value)"), "{text}: {err}");
    }
}

/// Round 2: the limits on what YAML decoding builds hold for all the documents of one
/// manifest_decode_multi call, and for a kubectl_manifest body and chart values, where one
/// long anchored scalar named by thousands of aliases would build gigabytes.
#[test]
fn yaml_aliases_are_counted_across_documents_and_in_provider_bodies() {
    let level = |name: char, prev: char| {
        format!(
            "{name}: &{name} [{}]",
            vec![format!("*{prev}"); 8].join(",")
        )
    };
    let document = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\na: &a \"{}\"\n{}\n{}\n{}\n{}\ndata: [*e, *e]\n",
        "x".repeat(4000),
        level('b', 'a'),
        level('c', 'b'),
        level('d', 'c'),
        level('e', 'd'),
    );
    let aliases: Vec<String> = (0..3000).map(|i| format!("k{i}: *a")).collect();
    let body = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x: &a \"{}\"\ndata: {{{}}}\n",
        "x".repeat(2_000_000),
        aliases.join(",")
    );
    let providers = "terraform {\n  required_providers {\n    kubernetes = {\n      source = \"hashicorp/kubernetes\"\n    }\n    kubectl = {\n      source = \"gavinbunney/kubectl\"\n    }\n  }\n}\n";
    for main in [
        "output \"x\" {\n  value = length(provider::kubernetes::manifest_decode_multi(file(\"docs.yaml\")))\n}\n",
        "resource \"kubectl_manifest\" \"m\" {\n  yaml_body = file(\"body.yaml\")\n}\n",
        "resource \"helm_release\" \"r\" {\n  name       = \"x\"\n  repository = \"https://example.invalid/charts\"\n  chart      = \"x\"\n  version    = \"1.0.0\"\n  values     = [file(\"body.yaml\")]\n}\n",
    ] {
        let dir = stack(&[
            ("docs.yaml", &[document.as_str(); 100].join("---\n")),
            ("body.yaml", &body),
            ("main.tf", &format!("{providers}\n{main}")),
        ]);
        let (code, out, err) = run(dir.path(), &["validate"], &[]);
        assert_eq!(code, 1, "{main}: {out}{err}");
        assert!(err.contains("more than 64 MiB of text"), "{main}: {err}");
    }
}

/// A device and a FIFO in `dir`, each with the words a refusal to read it uses.
#[cfg(unix)]
fn special_files(dir: &Path) -> [(String, &'static str); 2] {
    let fifo = dir.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    [
        (
            "/dev/zero".to_owned(),
            "it is a character device, not a regular file",
        ),
        (
            fifo.to_str().unwrap().to_owned(),
            "it is a FIFO, not a regular file",
        ),
    ]
}

/// Round 2: `review` of a device or a FIFO is refused before anything is read, naming it.
#[cfg(unix)]
#[test]
fn review_refuses_a_device_or_a_fifo_before_reading() {
    let dir = stack(&[]);
    for (path, says) in special_files(dir.path()) {
        let (code, out, err) = run(dir.path(), &["review", &path], &[]);
        assert_eq!(code, 1, "{path}: {out}{err}");
        assert!(err.contains(&path) && err.contains(says), "{path}: {err}");
    }
}

/// Round 2: a JSON plan with a field of the wrong shape is an error naming the field.
#[test]
fn a_json_plan_of_the_wrong_shape_is_an_error_naming_the_field() {
    let dir = stack(&[(
        "odd.json",
        r#"{"format_version":"1.2","resource_changes":[{"address":"a.b","type":5,"change":{"actions":["create"]}}]}"#,
    )]);
    let (code, out, err) = run(dir.path(), &["review", "odd.json"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("odd.json is not a JSON plan: the field resource_changes[0].type is integer `5`, expected a string"),
        "{err}"
    );
}

/// Round 2: archive_file's source_file, a file in its source_dir, and the local backend's
/// path on a device or a FIFO are refused before anything is read, naming them.
#[cfg(unix)]
#[test]
fn archives_and_local_states_refuse_a_device_or_a_fifo_before_reading() {
    let dir = stack(&[]);
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for (path, says) in special_files(dir.path()) {
        let linked = tree.join("special");
        let _ = std::fs::remove_file(&linked);
        std::os::unix::fs::symlink(&path, &linked).unwrap();
        for main in [
            format!("data \"archive_file\" \"a\" {{\n  type        = \"zip\"\n  source_file = \"{path}\"\n  output_path = \"out.zip\"\n}}\n"),
            "data \"archive_file\" \"a\" {\n  type        = \"zip\"\n  source_dir  = \"tree\"\n  output_path = \"out.zip\"\n}\n".to_owned(),
            format!("terraform {{\n  backend \"local\" {{\n    path = \"{path}\"\n  }}\n}}\n\noutput \"x\" {{\n  value = 1\n}}\n"),
        ] {
            std::fs::write(dir.path().join("main.tf"), &main).unwrap();
            let (code, out, err) = run(dir.path(), &["plan"], &[]);
            assert_eq!(code, 1, "{main}: {out}{err}");
            // Help text is wrapped to the terminal's width.
            let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains(says), "{main}: {err}");
        }
    }
}

/// Round 2: `init -backend-config` with a device or a FIFO is refused before anything is read,
/// naming it.
#[cfg(unix)]
#[test]
fn a_backend_config_file_that_is_a_device_or_a_fifo_is_refused_before_reading() {
    let dir = stack(&[(
        "main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\noutput \"x\" {\n  value = 1\n}\n",
    )]);
    for (path, says) in special_files(dir.path()) {
        let argument = format!("-backend-config={path}");
        let (code, out, err) = run(dir.path(), &["init", &argument], &[]);
        assert_eq!(code, 1, "{path}: {out}{err}");
        assert!(err.contains(&path) && err.contains(says), "{path}: {err}");
    }
}

/// Round 2: `output NAME` escapes what could act on a terminal in a string, as plan text does;
/// `--raw` prints it as it is and `--json` JSON-escaped, as Terraform prints them.
#[test]
fn output_escapes_control_characters_except_raw() {
    let dir = stack(&[(
        "main.tf",
        "output \"x\" {\n  value = \"a\\u001b[2Jb\\u0007\"\n}\n",
    )]);
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["output", "x"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "a\\u001b[2Jb\\u0007\n");
    let (code, out, err) = run(dir.path(), &["output", "--raw", "x"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "a\u{1b}[2Jb\u{7}");
    let (code, out, err) = run(dir.path(), &["output", "--json", "x"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "\"a\\u001b[2Jb\\u0007\"\n");
}

/// Round 2: each expression within its own limits, the values all the expressions of a run
/// build stop at the run's limit (gpustack_lang's MAX_RUN_VALUE_BYTES) with a located error,
/// where dozens of locals, each holding what it built, would exhaust memory. Each local here
/// copies a 64 MB string, so the run's 2 GiB are reached by the 33rd.
#[test]
fn the_values_all_expressions_of_a_run_build_stop_at_a_named_limit() {
    let x = "x".repeat(8000);
    let locals: String = (0..40)
        .map(|i| format!("  n{i} = length(local.big)\n"))
        .collect();
    let dir = stack(&[(
        "main.tf",
        &format!(
            "locals {{\n  big = replace(\"{x}\", \"x\", \"{x}\")\n{locals}}}\noutput \"n\" {{\n  value = local.n39\n}}\n"
        ),
    )]);
    let started = Instant::now();
    let (code, out, err) = run(dir.path(), &["validate"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Run too large"), "{err}");
    assert!(err.contains("at most 2048 MiB"), "{err}");
    assert!(err.contains("main.tf:"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
