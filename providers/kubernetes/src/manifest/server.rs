//! The API server's answers about one object: whether its kind is served, what holds its name
//! now, what a refused request means; and the diagnostics an operation's failure becomes.

use super::object_id::ObjectId;
use crate::cluster::{Kind, api_error};
use crate::connection::Connected;
use gpustack_protocol::Diagnostic;
use kube::api::DynamicObject;

pub(super) fn error(summary: &str, detail: impl Into<String>) -> Vec<Diagnostic> {
    vec![Diagnostic::error(summary, detail)]
}

/// What holds an object's name now, against the uid a request named.
pub(super) enum Holder {
    Gone,
    Another,
    Same { deleting: bool },
}

pub(super) fn api_status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// What a conflict on a resourceVersion precondition says: the object changed since it was
/// read, and nothing was applied.
pub(crate) const CHANGED_SINCE_READ: &str =
    "The object changed since gpustack read it; nothing was changed. Apply again.";

pub(super) fn conflict_detail(e: &kube::Error) -> Option<String> {
    match e {
        // An object changed since it was read, under a resourceVersion precondition.
        kube::Error::Api(status)
            if status.is_conflict() && status.message.contains("has been modified") =>
        {
            Some(format!("{}\n{CHANGED_SINCE_READ}", status.message))
        }
        kube::Error::Api(status) if status.is_conflict() => Some(format!(
            "{}\nAnother field manager owns these fields. Set force_conflicts = true to take them over, or stop managing them here.",
            status.message
        )),
        _ => None,
    }
}

impl Connected {
    /// What holds `name` now, against the uid a request named (an apply's body, a delete's
    /// precondition). `None` when it cannot be read.
    pub(super) async fn holder(
        &self,
        api: &kube::Api<DynamicObject>,
        name: &str,
        named: &str,
    ) -> Option<Holder> {
        match api.get_opt(name).await {
            Ok(None) => Some(Holder::Gone),
            Ok(Some(object)) if object.metadata.uid.as_deref() != Some(named) => {
                Some(Holder::Another)
            }
            Ok(Some(object)) => Some(Holder::Same {
                deleting: object.metadata.deletion_timestamp.is_some(),
            }),
            Err(_) => None,
        }
    }

    /// Why an apply that named the uid of the object it read was refused, when that object is
    /// no longer there: gone, or another of the same name. The API server refuses such an
    /// apply and changes nothing (409 where it would otherwise create the object, 422 where
    /// the uid would change), but a field-manager conflict can be what it reports first; the
    /// object as it is now tells them apart.
    pub(super) async fn not_there(
        &self,
        api: &kube::Api<DynamicObject>,
        name: &str,
        named: Option<&str>,
        e: &kube::Error,
    ) -> Option<&'static str> {
        let named = named?;
        if !matches!(e, kube::Error::Api(status) if status.code == 409 || status.code == 422) {
            return None;
        }
        match self.holder(api, name, named).await? {
            Holder::Gone => Some("was deleted"),
            Holder::Another => Some("was replaced by another object of the same name"),
            Holder::Same { .. } => None,
        }
    }

    pub(super) async fn kind_of(&self, id: &ObjectId) -> Result<Option<Kind>, Vec<Diagnostic>> {
        self.cluster
            .kind(&id.api_version, &id.kind)
            .await
            .map_err(|e| error("Cannot reach the Kubernetes API", api_error(&e)))
    }
}
