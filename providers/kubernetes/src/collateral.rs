//! What deleting an object takes with it besides itself: a Namespace every object in it, a
//! CustomResourceDefinition every custom resource of its kind. The objects among those that
//! this stack does not manage are its *collateral*: the plan names them, refuses the deletion
//! unless the resource says `force_destroy = true`, and apply looks again just before the
//! DELETE and stops if more would go than the plan said.
//!
//! What counts as this stack's: an object in its state (the uids this provider refreshed, or
//! those the plan recorded), an object carrying its mark (the `gpustack.dev/owner` annotation
//! or label every object it applies gets), an object of a Helm release whose record carries
//! its mark, and what a controller made for one of those (an owner reference with
//! `controller: true`: a Deployment's ReplicaSets and their Pods, a CronJob's Jobs, an
//! operator's objects for its custom resource).
//!
//! Left out as the cluster's own, in every namespace, whoever deletes it:
//! - ServiceAccount `default`: the service account controller makes it in every namespace,
//!   and makes it again when it is deleted;
//! - ConfigMap `kube-root-ca.crt`: the root CA publisher puts it in every namespace, and puts it
//!   back when it is deleted;
//! - Events (`v1` and `events.k8s.io`): records of what happened to other objects, which the
//!   API server expires by itself; not even listed;
//! - `metrics.k8s.io` (PodMetrics): answered from the metrics server's memory, nothing stored
//!   that a deletion could lose; not listed.
//!
//! **Invariant:** a look is one discovery (two requests, aggregated) and one metadata-only
//! LIST per listable kind, in pages, all kinds at once; it is made only for a deletion whose
//! reach is wider than its object (`Reach::of`).

use crate::cluster::{Cluster, api_error};
use futures::StreamExt;
use gpustack_protocol::OWNER_KEY;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, ObjectMeta};
use kube::discovery::{Discovery, Scope, verbs};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Objects per page of a look's LIST.
const PAGE: u32 = 500;
/// LISTs of one look in flight at once.
const LISTS_AT_ONCE: usize = 16;
/// What Helm puts on each object of a release: the release's name and namespace.
const HELM_RELEASE_NAME: &str = "meta.helm.sh/release-name";
const HELM_RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

/// Where a deletion reaches beyond its own object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Every object of the namespace (the namespace controller deletes them all).
    Namespace(String),
    /// Every custom resource a CustomResourceDefinition serves, in every namespace.
    Instances { api_version: String, kind: String },
}

impl Reach {
    /// The reach of deleting the object `kind` named `name`, whose manifest is `manifest`;
    /// `None` when the deletion takes nothing else with it.
    pub(crate) fn of(
        api_version: &str,
        kind: &str,
        name: &str,
        manifest: &serde_json::Value,
    ) -> Option<Self> {
        match (api_version, kind) {
            ("v1", "Namespace") => Some(Self::Namespace(name.to_owned())),
            (v, "CustomResourceDefinition") if v.starts_with("apiextensions.k8s.io/") => {
                let spec = manifest.get("spec")?;
                let group = spec.get("group")?.as_str()?;
                let kind = spec.pointer("/names/kind")?.as_str()?;
                let versions = spec.get("versions")?.as_array()?;
                let served = |v: &&serde_json::Value| {
                    v.get("served").and_then(serde_json::Value::as_bool) != Some(false)
                };
                let version = versions
                    .iter()
                    .filter(served)
                    .find(|v| v.get("storage").and_then(serde_json::Value::as_bool) == Some(true))
                    .or_else(|| versions.iter().find(served))?
                    .get("name")?
                    .as_str()?;
                Some(Self::Instances {
                    api_version: format!("{group}/{version}"),
                    kind: kind.to_owned(),
                })
            }
            _ => None,
        }
    }
}

/// An object's reference to its owner.
#[derive(Debug, Clone)]
struct Owner {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    controller: bool,
}

/// One object a look found: what decides whether it is this stack's.
#[derive(Debug, Clone)]
struct Found {
    describe: String,
    uid: String,
    namespace: Option<String>,
    owners: Vec<Owner>,
    /// It carries this stack's mark.
    marked: bool,
    /// The Helm release it belongs to: (namespace, name).
    release: Option<(String, String)>,
    /// It is the record Helm keeps of a release (a Secret of its storage driver): the
    /// release's name.
    record: Option<String>,
    /// The cluster makes it in every namespace.
    default: bool,
}

impl Found {
    fn of(resource: &ApiResource, metadata: ObjectMeta, owner: &str) -> Option<Self> {
        let name = metadata.name?;
        let uid = metadata.uid?;
        let annotations = metadata.annotations.unwrap_or_default();
        let labels = metadata.labels.unwrap_or_default();
        let mine = |map: &BTreeMap<String, String>| {
            !owner.is_empty() && map.get(OWNER_KEY).map(String::as_str) == Some(owner)
        };
        let marked = mine(&annotations) || mine(&labels);
        let core = resource.api_version == "v1";
        let record = (core
            && resource.kind == "Secret"
            && labels.get("owner").map(String::as_str) == Some("helm"))
        .then(|| labels.get("name").cloned())
        .flatten();
        let release = match (
            annotations.get(HELM_RELEASE_NAMESPACE),
            annotations.get(HELM_RELEASE_NAME),
        ) {
            (Some(ns), Some(name)) => Some((ns.clone(), name.clone())),
            _ => None,
        };
        let default = core
            && ((resource.kind == "ServiceAccount" && name == "default")
                || (resource.kind == "ConfigMap" && name == "kube-root-ca.crt"));
        let describe = match &metadata.namespace {
            Some(ns) => format!("{} {ns}/{name}", resource.kind),
            None => format!("{} {name}", resource.kind),
        };
        let owners = metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| Owner {
                api_version: o.api_version,
                kind: o.kind,
                name: o.name,
                uid: o.uid,
                controller: o.controller == Some(true),
            })
            .collect();
        Some(Self {
            describe,
            uid,
            namespace: metadata.namespace,
            owners,
            marked,
            release,
            record,
            default,
        })
    }
}

/// What one look at a deletion's reach found.
#[derive(Debug, Default)]
pub(crate) struct Sight {
    /// The objects the deletion would take.
    found: Vec<Found>,
    /// Objects outside the reach that own some of them (a cluster-scoped custom resource
    /// whose operator made objects in the namespace): they decide whose those are.
    owners: Vec<Found>,
    /// The uids of owners that are gone: an object whose owners are all gone is the garbage
    /// collector's, whatever is deleted (a DaemonSet of a ClusterPolicy that its Helm release
    /// took with it moments ago).
    gone: HashSet<String>,
    /// The Helm releases whose record carries this stack's mark, (namespace, name).
    releases: HashSet<(String, String)>,
    /// The Helm releases in this stack's state (imported ones carry no mark).
    recorded: HashSet<(String, String)>,
    /// What could not be listed, and why.
    pub(crate) unread: Vec<String>,
}

/// What a plan makes of a sight.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Judged {
    /// The objects this stack does not manage, as users call them, sorted.
    pub(crate) collateral: Vec<String>,
    /// The uids of every object not this stack's by its mark alone: what apply holds the
    /// deletion to.
    pub(crate) seen: Vec<String>,
}

impl Sight {
    /// This stack's by the objects themselves: its mark, a release whose record carries its
    /// mark (the release's objects and records), the cluster's own. What apply can tell
    /// again from the cluster alone.
    fn intrinsic(&self, f: &Found) -> bool {
        let orphaned = !f.owners.is_empty() && f.owners.iter().all(|o| self.gone.contains(&o.uid));
        f.default || f.marked || orphaned || self.of_release(f, &self.releases)
    }

    /// One of the objects or records of a release in `releases`.
    fn of_release(&self, f: &Found, releases: &HashSet<(String, String)>) -> bool {
        let record = f
            .namespace
            .clone()
            .zip(f.record.clone())
            .is_some_and(|release| releases.contains(&release));
        record
            || f.release
                .as_ref()
                .is_some_and(|release| releases.contains(release))
    }

    /// The uids of the objects that are this stack's: those `base` says, those whose uid is
    /// in `extra`, and what a controller made for any of them.
    fn closure(&self, base: impl Fn(&Found) -> bool, extra: &HashSet<String>) -> HashSet<String> {
        let all: Vec<&Found> = self.found.iter().chain(&self.owners).collect();
        let mut accepted: HashSet<String> = extra.clone();
        accepted.extend(all.iter().filter(|f| base(f)).map(|f| f.uid.clone()));
        loop {
            let more: Vec<String> = all
                .iter()
                .filter(|f| !accepted.contains(&f.uid))
                .filter(|f| {
                    f.owners
                        .iter()
                        .any(|o| o.controller && accepted.contains(&o.uid))
                })
                .map(|f| f.uid.clone())
                .collect();
            if more.is_empty() {
                return accepted;
            }
            accepted.extend(more);
        }
    }

    /// At plan: what is not this stack's (`known`: the uids of its state), and what apply
    /// holds the deletion to.
    pub(crate) fn judge(&self, known: &HashSet<String>) -> Judged {
        let by_mark = self.closure(|f| self.intrinsic(f), &HashSet::new());
        let managed = self.closure(
            |f| self.intrinsic(f) || self.of_release(f, &self.recorded),
            known,
        );
        let mut collateral: Vec<String> = self
            .found
            .iter()
            .filter(|f| !managed.contains(&f.uid))
            .map(|f| f.describe.clone())
            .collect();
        collateral.sort();
        let mut seen: Vec<String> = self
            .found
            .iter()
            .filter(|f| !by_mark.contains(&f.uid))
            .map(|f| f.uid.clone())
            .collect();
        seen.sort();
        Judged { collateral, seen }
    }

    /// At apply: the objects the deletion would now take that the plan did not see and that
    /// are not this stack's, sorted.
    pub(crate) fn unforeseen(&self, seen: &HashSet<String>) -> Vec<String> {
        let accepted = self.closure(|f| self.intrinsic(f), seen);
        let mut new: Vec<String> = self
            .found
            .iter()
            .filter(|f| !accepted.contains(&f.uid))
            .map(|f| f.describe.clone())
            .collect();
        new.sort();
        new
    }
}

/// Looks at everything a deletion reaches. `Err` when nothing can be known (discovery fails);
/// a kind that cannot be listed is noted in [`Sight::unread`].
/// `managed` are the identities of everything in the stack's state; its Helm releases
/// (`helm:NAMESPACE/NAME`) are the ones this provider can tell the objects of.
pub(crate) async fn look(
    cluster: &Cluster,
    reach: &Reach,
    owner: &str,
    managed: &[String],
) -> Result<Sight, String> {
    let (resources, namespace) = match reach {
        Reach::Namespace(ns) => (namespaced_kinds(cluster).await?, Some(ns.as_str())),
        Reach::Instances { api_version, kind } => {
            match cluster
                .kind(api_version, kind)
                .await
                .map_err(|e| api_error(&e))?
            {
                Some(found) => (vec![found.resource], None),
                // Not served (yet, or any more): there are none.
                None => return Ok(Sight::default()),
            }
        }
    };
    let lists = resources.into_iter().map(|resource| async move {
        let api = match namespace {
            Some(ns) => {
                Api::<DynamicObject>::namespaced_with(cluster.client.clone(), ns, &resource)
            }
            None => Api::<DynamicObject>::all_with(cluster.client.clone(), &resource),
        };
        let listed = list(&api, &resource, owner).await;
        (resource, listed)
    });
    let mut sight = Sight::default();
    let mut answers = futures::stream::iter(lists).buffer_unordered(LISTS_AT_ONCE);
    while let Some((resource, listed)) = answers.next().await {
        match listed {
            Ok(found) => sight.found.extend(found),
            // Gone from the API since discovery: nothing of it to take.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => sight.unread.push(format!(
                "{} {} ({})",
                resource.api_version,
                resource.plural,
                api_error(&e)
            )),
        }
    }
    drop(answers);
    sight.unread.sort();
    // The same object under two names of its kind counts once.
    let mut uids = HashSet::new();
    sight.found.retain(|f| uids.insert(f.uid.clone()));
    (sight.owners, sight.gone) = outside_owners(cluster, &sight.found, owner).await;
    sight.recorded = managed
        .iter()
        .filter_map(|identity| identity.strip_prefix("helm:")?.split_once('/'))
        .map(|(ns, name)| (ns.to_owned(), name.to_owned()))
        .collect();
    sight.releases = marked_releases(cluster, &sight, owner, namespace).await;
    Ok(sight)
}

/// One metadata-only LIST of a kind, in pages.
async fn list(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    owner: &str,
) -> Result<Vec<Found>, kube::Error> {
    let mut params = ListParams::default().limit(PAGE);
    let mut found = Vec::new();
    loop {
        let page = api.list_metadata(&params).await?;
        found.extend(
            page.items
                .into_iter()
                .filter_map(|item| Found::of(resource, item.metadata, owner)),
        );
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(found),
        }
    }
}

/// Every namespaced kind that can be listed, once each (its group's preferred version), but
/// the ones left out above (events, metrics).
async fn namespaced_kinds(cluster: &Cluster) -> Result<Vec<ApiResource>, String> {
    let discovery = match Discovery::new(cluster.client.clone())
        .run_aggregated()
        .await
    {
        Ok(discovery) => discovery,
        // Servers before aggregated discovery: one request per group version.
        Err(_) => Discovery::new(cluster.client.clone())
            .run()
            .await
            .map_err(|e| api_error(&e))?,
    };
    let mut kinds = Vec::new();
    for group in discovery.groups() {
        if group.name() == "metrics.k8s.io" {
            continue;
        }
        for (resource, caps) in group.recommended_resources() {
            let event = resource.plural == "events"
                && (resource.group.is_empty() || resource.group == "events.k8s.io");
            if caps.scope == Scope::Namespaced && caps.supports_operation(verbs::LIST) && !event {
                kinds.push(resource);
            }
        }
    }
    Ok(kinds)
}

/// The owners of found objects that are not found themselves, read once each: those still
/// there (a cluster-scoped custom resource whose operator made objects in the namespace, so
/// that what it made for this stack is this stack's), and the uids of those gone. A
/// namespaced owner is read in its dependent's namespace, the only one it may be in.
async fn outside_owners(
    cluster: &Cluster,
    found: &[Found],
    owner: &str,
) -> (Vec<Found>, HashSet<String>) {
    let uids: HashSet<&str> = found.iter().map(|f| f.uid.as_str()).collect();
    let wanted: BTreeSet<(String, String, Option<String>, String, String)> = found
        .iter()
        .flat_map(|f| f.owners.iter().map(move |o| (f, o)))
        .filter(|(_, o)| !uids.contains(o.uid.as_str()))
        .map(|(f, o)| {
            (
                o.api_version.clone(),
                o.kind.clone(),
                f.namespace.clone(),
                o.name.clone(),
                o.uid.clone(),
            )
        })
        .collect();
    let reads = wanted
        .into_iter()
        .map(|(api_version, kind, namespace, name, uid)| async move {
            // An owner that cannot be read (a kind not served, no permission) is neither.
            let found = cluster.kind(&api_version, &kind).await.ok().flatten()?;
            let namespace = found.namespaced.then_some(namespace).flatten();
            let object = cluster
                .api(&found, namespace.as_deref())
                .get_metadata_opt(&name)
                .await
                .ok()?;
            let read = object.and_then(|o| Found::of(&found.resource, o.metadata, owner));
            Some(match read {
                Some(read) if read.uid == uid => Ok(read),
                // Gone, or another object of its name: the owner the reference names is gone.
                _ => Err(uid),
            })
        });
    let answers: Vec<Result<Found, String>> = futures::stream::iter(reads)
        .buffer_unordered(LISTS_AT_ONCE)
        .filter_map(|read| async move { read })
        .collect()
        .await;
    let mut owners = Vec::new();
    let mut gone = HashSet::new();
    for answer in answers {
        match answer {
            Ok(read) => owners.push(read),
            Err(uid) => {
                gone.insert(uid);
            }
        }
    }
    (owners, gone)
}

/// The Helm releases of found objects whose record carries this stack's mark: from the
/// records found, and for releases kept in other namespaces than the one `listed` whole, one
/// LIST of the marked records of each such namespace.
async fn marked_releases(
    cluster: &Cluster,
    sight: &Sight,
    owner: &str,
    listed: Option<&str>,
) -> HashSet<(String, String)> {
    let all = || sight.found.iter().chain(&sight.owners);
    let mut marked: HashSet<(String, String)> = all()
        .filter(|f| f.marked)
        .filter_map(|f| Some((f.namespace.clone()?, f.record.clone()?)))
        .collect();
    if owner.is_empty() {
        return marked;
    }
    let wanted: BTreeSet<String> = all()
        .filter_map(|f| f.release.clone())
        .filter(|release| !marked.contains(release))
        .map(|(ns, _)| ns)
        .filter(|ns| Some(ns.as_str()) != listed)
        .collect();
    let secrets = ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&());
    let params = ListParams::default().labels(&format!("owner=helm,{OWNER_KEY}={owner}"));
    let lists: HashMap<String, _> = futures::future::join_all(wanted.into_iter().map(|ns| {
        let api = Api::<DynamicObject>::namespaced_with(cluster.client.clone(), &ns, &secrets);
        let params = params.clone();
        async move {
            let listed = api.list_metadata(&params).await;
            (ns, listed)
        }
    }))
    .await
    .into_iter()
    .collect();
    for (ns, listed) in lists {
        let Ok(listed) = listed else { continue };
        marked.extend(listed.items.into_iter().filter_map(|item| {
            let name = item.metadata.labels?.get("name")?.clone();
            Some((ns.clone(), name))
        }));
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(describe: &str, uid: &str) -> Found {
        Found {
            describe: describe.to_owned(),
            uid: uid.to_owned(),
            namespace: Some("team".to_owned()),
            owners: vec![],
            marked: false,
            release: None,
            record: None,
            default: false,
        }
    }

    fn owned_by(mut f: Found, uid: &str, controller: bool) -> Found {
        f.owners.push(Owner {
            api_version: "apps/v1".to_owned(),
            kind: "ReplicaSet".to_owned(),
            name: "owner".to_owned(),
            uid: uid.to_owned(),
            controller,
        });
        f
    }

    fn meta(name: &str, annotations: &[(&str, &str)], labels: &[(&str, &str)]) -> ObjectMeta {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            )
        };
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("team".to_owned()),
            uid: Some(format!("uid-{name}")),
            annotations: map(annotations),
            labels: map(labels),
            ..Default::default()
        }
    }

    fn core(kind: &str) -> ApiResource {
        ApiResource {
            group: String::new(),
            version: "v1".to_owned(),
            api_version: "v1".to_owned(),
            kind: kind.to_owned(),
            plural: format!("{}s", kind.to_lowercase()),
        }
    }

    #[test]
    fn what_the_cluster_makes_in_every_namespace_is_not_collateral() {
        let account = Found::of(&core("ServiceAccount"), meta("default", &[], &[]), "gs-1");
        let ca = Found::of(
            &core("ConfigMap"),
            meta("kube-root-ca.crt", &[], &[]),
            "gs-1",
        );
        let other = Found::of(&core("ServiceAccount"), meta("builder", &[], &[]), "gs-1");
        // Only the names the cluster uses, and only in the core group.
        let mut not_core = core("ConfigMap");
        not_core.api_version = "example.com/v1".to_owned();
        let mut lookalike_meta = meta("kube-root-ca.crt", &[], &[]);
        lookalike_meta.uid = Some("uid-lookalike".to_owned());
        let lookalike = Found::of(&not_core, lookalike_meta, "gs-1");
        let sight = Sight {
            found: [account, ca, other, lookalike]
                .into_iter()
                .flatten()
                .collect(),
            ..Default::default()
        };
        let judged = sight.judge(&HashSet::new());
        assert_eq!(
            judged.collateral,
            [
                "ConfigMap team/kube-root-ca.crt",
                "ServiceAccount team/builder"
            ]
        );
        assert_eq!(judged.seen, ["uid-builder", "uid-lookalike"]);
    }

    #[test]
    fn the_stacks_objects_are_those_in_its_state_marked_or_made_for_them() {
        let marked = Found::of(
            &core("ConfigMap"),
            meta("marked", &[(OWNER_KEY, "gs-1")], &[]),
            "gs-1",
        )
        .unwrap();
        let other_stack = Found::of(
            &core("ConfigMap"),
            meta("theirs", &[(OWNER_KEY, "gs-2")], &[]),
            "gs-1",
        )
        .unwrap();
        let imported = found("ConfigMap team/imported", "imported");
        // A controller's object for one of this stack's, two levels down.
        let replica_set = owned_by(found("ReplicaSet team/web-1", "rs"), &marked.uid, true);
        let pod = owned_by(found("Pod team/web-1-a", "pod"), "rs", true);
        // Someone else's object that names one of this stack's as a mere owner.
        let attached = owned_by(
            found("Secret team/attached", "attached"),
            &marked.uid,
            false,
        );
        let hand_made = found("ConfigMap team/notes", "notes");
        let sight = Sight {
            found: vec![
                marked.clone(),
                other_stack,
                imported,
                replica_set,
                pod,
                attached,
                hand_made,
            ],
            ..Default::default()
        };
        let known = HashSet::from(["imported".to_owned()]);
        let judged = sight.judge(&known);
        assert_eq!(
            judged.collateral,
            [
                "ConfigMap team/notes",
                "ConfigMap team/theirs",
                "Secret team/attached"
            ]
        );
        // The state's objects are held by uid; the marked ones by their mark.
        assert_eq!(judged.seen, ["attached", "imported", "notes", "uid-theirs"]);
        // At apply, what the plan saw passes, and an object made since does not.
        let seen: HashSet<String> = judged.seen.into_iter().collect();
        assert!(sight.unforeseen(&seen).is_empty());
        let mut later = sight;
        later.found.push(found("ConfigMap team/late", "late"));
        later
            .found
            .push(owned_by(found("Pod team/web-1-b", "pod-b"), "rs", true));
        assert_eq!(later.unforeseen(&seen), ["ConfigMap team/late"]);
    }

    #[test]
    fn what_has_lost_all_its_owners_is_the_garbage_collectors() {
        let orphan = owned_by(found("DaemonSet team/plugin", "ds"), "policy", true);
        let pod = owned_by(found("Pod team/plugin-a", "pod"), "ds", true);
        let half = owned_by(
            owned_by(found("ConfigMap team/shared", "cm"), "policy", false),
            "alive",
            false,
        );
        let mut sight = Sight {
            found: vec![orphan, pod, half],
            ..Default::default()
        };
        assert_eq!(sight.judge(&HashSet::new()).collateral.len(), 3);
        sight.gone.insert("policy".to_owned());
        // One owner left: the collector keeps it, so the deletion takes it.
        assert_eq!(
            sight.judge(&HashSet::new()).collateral,
            ["ConfigMap team/shared"]
        );
    }

    #[test]
    fn a_release_whose_record_carries_the_mark_is_the_stacks() {
        let record = Found::of(
            &core("Secret"),
            meta(
                "sh.helm.release.v1.operator.v1",
                &[],
                &[("owner", "helm"), ("name", "operator"), (OWNER_KEY, "gs-1")],
            ),
            "gs-1",
        )
        .unwrap();
        assert_eq!(record.record.as_deref(), Some("operator"));
        // The record of a release someone else installed: Helm's, not the stack's.
        let other_record = Found::of(
            &core("Secret"),
            meta(
                "sh.helm.release.v1.other.v1",
                &[],
                &[("owner", "helm"), ("name", "other")],
            ),
            "gs-1",
        )
        .unwrap();
        let release = |name: &str, release: &str| {
            Found::of(
                &core("ConfigMap"),
                meta(
                    name,
                    &[
                        (HELM_RELEASE_NAME, release),
                        (HELM_RELEASE_NAMESPACE, "team"),
                    ],
                    &[],
                ),
                "gs-1",
            )
            .unwrap()
        };
        let mut sight = Sight {
            found: vec![
                record,
                other_record,
                release("ours", "operator"),
                release("theirs", "other"),
            ],
            ..Default::default()
        };
        sight
            .releases
            .insert(("team".to_owned(), "operator".to_owned()));
        assert_eq!(
            sight.judge(&HashSet::new()).collateral,
            [
                "ConfigMap team/theirs",
                "Secret team/sh.helm.release.v1.other.v1"
            ]
        );
        // A release in the state (imported: its record carries no mark) is the stack's too,
        // and apply holds its objects to the plan by uid.
        sight
            .recorded
            .insert(("team".to_owned(), "other".to_owned()));
        let judged = sight.judge(&HashSet::new());
        assert!(judged.collateral.is_empty());
        let seen: HashSet<String> = judged.seen.into_iter().collect();
        sight.recorded.clear();
        assert!(sight.unforeseen(&seen).is_empty());
    }

    #[test]
    fn a_crd_reaches_the_custom_resources_of_its_stored_version() {
        let crd = serde_json::json!({
            "spec": {
                "group": "example.com",
                "names": { "kind": "Widget", "plural": "widgets" },
                "versions": [
                    { "name": "v1alpha1", "served": true, "storage": false },
                    { "name": "v1", "served": true, "storage": true },
                ],
            }
        });
        assert_eq!(
            Reach::of(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "widgets.example.com",
                &crd
            ),
            Some(Reach::Instances {
                api_version: "example.com/v1".to_owned(),
                kind: "Widget".to_owned()
            })
        );
        assert_eq!(
            Reach::of("v1", "Namespace", "team", &serde_json::Value::Null),
            Some(Reach::Namespace("team".to_owned()))
        );
        assert_eq!(
            Reach::of("v1", "ConfigMap", "x", &serde_json::Value::Null),
            None
        );
    }
}
