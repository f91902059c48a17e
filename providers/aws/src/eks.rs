//! The EKS calls a node group's flow is built on: reading a group, and waiting, with backoff,
//! for a group to settle or an update to finish.

use crate::Connected;
use aws_sdk_eks::types::Nodegroup;
use gpustack_protocol::Diagnostic;
use std::time::Duration;

/// How long a node group may take to become active or go away.
const WAIT: Duration = Duration::from_secs(40 * 60);

pub(crate) fn error(summary: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(summary, e.to_string())
}

pub(crate) fn is_not_found<E: aws_sdk_eks::error::ProvideErrorMetadata>(
    e: &aws_sdk_eks::error::SdkError<E>,
) -> bool {
    e.as_service_error()
        .and_then(|s| s.code())
        .is_some_and(|c| c == "ResourceNotFoundException")
}

impl Connected {
    pub(crate) async fn describe_group(
        &self,
        cluster: &str,
        name: &str,
    ) -> Result<Option<Nodegroup>, Diagnostic> {
        match self
            .eks
            .describe_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .send()
            .await
        {
            Ok(out) => Ok(out.nodegroup().cloned()),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(error(
                &format!("Cannot read EKS node group {cluster}/{name}"),
                gpustack_protocol::error_chain(&e),
            )),
        }
    }

    /// Polls with backoff until the node group is ACTIVE (or gone, when `gone` is asked).
    pub(crate) async fn wait_for(
        &self,
        cluster: &str,
        name: &str,
        gone: bool,
    ) -> Result<Option<Nodegroup>, Diagnostic> {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut delay = Duration::from_secs(2);
        loop {
            let group = self.describe_group(cluster, name).await?;
            let status = group
                .as_ref()
                .and_then(|g| g.status())
                .map(|s| s.as_str().to_owned());
            match (gone, group, status.as_deref()) {
                (true, None, _) => return Ok(None),
                (false, Some(group), Some("ACTIVE")) => return Ok(Some(group)),
                (_, Some(group), Some("CREATE_FAILED" | "DELETE_FAILED"))
                | (false, Some(group), Some("DEGRADED")) => {
                    let issues: Vec<String> = group
                        .health()
                        .map(|h| h.issues())
                        .unwrap_or_default()
                        .iter()
                        .map(|i| {
                            format!(
                                "{}: {}",
                                i.code().map(|c| c.as_str()).unwrap_or("issue"),
                                i.message().unwrap_or_default()
                            )
                        })
                        .collect();
                    return Err(Diagnostic::error(
                        format!(
                            "EKS node group {cluster}/{name} is {}",
                            status.unwrap_or_default()
                        ),
                        issues.join("; "),
                    ));
                }
                (false, None, _) => {
                    return Err(Diagnostic::error(
                        format!("EKS node group {cluster}/{name} disappeared"),
                        "It was deleted while gpustack waited for it to become active.",
                    ));
                }
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Diagnostic::error(
                    format!("Timed out waiting for EKS node group {cluster}/{name}"),
                    format!(
                        "It is still {} after {} minutes.",
                        status.unwrap_or_else(|| "there".into()),
                        WAIT.as_secs() / 60
                    ),
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
        }
    }

    /// Waits for an update: until DescribeUpdate says it succeeded (the group can still be
    /// ACTIVE before the update starts), then for the group to be ACTIVE.
    pub(crate) async fn wait_update(
        &self,
        cluster: &str,
        name: &str,
        update: Option<&aws_sdk_eks::types::Update>,
    ) -> Result<(), Diagnostic> {
        if let Some(id) = update.and_then(|u| u.id()) {
            let deadline = tokio::time::Instant::now() + WAIT;
            let mut delay = Duration::from_secs(2);
            loop {
                let answer = self
                    .eks
                    .describe_update()
                    .name(cluster)
                    .nodegroup_name(name)
                    .update_id(id)
                    .send()
                    .await;
                let status = match &answer {
                    Ok(out) => out
                        .update()
                        .and_then(|u| u.status())
                        .map(|s| s.as_str().to_owned()),
                    // Where the API has no DescribeUpdate at all (an emulator), the group's
                    // status decides; any other failure (AccessDenied, throttling that
                    // outlasted the retries, a real ResourceNotFoundException) is an error:
                    // the group can read ACTIVE before the update has started.
                    Err(e)
                        if operation_missing(
                            e.raw_response().map(|r| r.status().as_u16()),
                            aws_sdk_eks::error::ProvideErrorMetadata::code(e),
                        ) =>
                    {
                        tracing::warn!(
                            "DescribeUpdate is not served by this endpoint; waiting for the node group's status instead"
                        );
                        break;
                    }
                    Err(e) => {
                        return Err(Diagnostic::error(
                            format!("Cannot follow the update of EKS node group {cluster}/{name}"),
                            format!("DescribeUpdate {id}: {}", gpustack_protocol::error_chain(e)),
                        ));
                    }
                };
                match status.as_deref() {
                    Some("Successful") => break,
                    Some(done @ ("Failed" | "Cancelled")) => {
                        let errors: Vec<String> = answer
                            .ok()
                            .and_then(|out| out.update().map(|u| u.errors().to_vec()))
                            .unwrap_or_default()
                            .iter()
                            .map(|e| {
                                format!(
                                    "{}: {}",
                                    e.error_code().map(|c| c.as_str()).unwrap_or("error"),
                                    e.error_message().unwrap_or_default()
                                )
                            })
                            .collect();
                        return Err(Diagnostic::error(
                            format!(
                                "The update of EKS node group {cluster}/{name} {}",
                                done.to_lowercase()
                            ),
                            errors.join("; "),
                        ));
                    }
                    _ => {}
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(Diagnostic::error(
                        format!(
                            "Timed out waiting for the update of EKS node group {cluster}/{name}"
                        ),
                        format!(
                            "Update {id} is still in progress after {} minutes.",
                            WAIT.as_secs() / 60
                        ),
                    ));
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
        self.wait_for(cluster, name, false).await.map(|_| ())
    }
}

/// True when an endpoint answers that an operation does not exist at all: 501, an
/// UnknownOperation/NotImplemented error, or a 404 that carries no AWS error code (EKS's own
/// "no such update" is a ResourceNotFoundException, which is an error like any other).
fn operation_missing(status: Option<u16>, code: Option<&str>) -> bool {
    let Some(status) = status else {
        return false;
    };
    status == 501
        || matches!(
            code,
            Some("UnknownOperationException" | "NotImplemented" | "InvalidAction")
        )
        || (status == 404 && code.is_none())
}

#[cfg(test)]
mod operation_missing_tests {
    use super::operation_missing;

    #[test]
    fn only_an_endpoint_without_the_operation_falls_back() {
        assert!(operation_missing(Some(404), None));
        assert!(operation_missing(Some(501), None));
        assert!(!operation_missing(
            Some(404),
            Some("ResourceNotFoundException")
        ));
        assert!(!operation_missing(Some(403), Some("AccessDeniedException")));
        assert!(!operation_missing(None, None));
    }
}
