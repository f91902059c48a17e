//! Dynamic Resource Allocation at plan time: every DeviceClass and ResourceClaim(Template)
//! selector of the stack evaluated, with the scheduler's CEL semantics ([`selector`]), against
//! the devices NVIDIA's DRA driver publishes — the live nodes' ResourceSlices and the devices
//! the planned DRA pools will publish ([`devices`]) — and each request of a claim allocated the
//! way the scheduler allocates it, on one node: a selector that matches no device anywhere, a
//! count no node can give, a runtime error the scheduler would stop at, and what the API
//! server refuses at create are located findings at the selector.
//!
//! The verdict is about what the nodes offer, not what is free now: devices other claims hold
//! are not subtracted (a claim that fits an empty cluster plans).
//!
//! **Invariant:** every selector is compiled once per plan, and evaluated once per distinct
//! value of what it reads (`dra::tests::each_selector_is_compiled_once_and_evaluated_per_distinct_device`).

mod allocation;
mod checks;
pub mod devices;
mod selector;

use crate::model::{DraInputs, Model, Origin, key};
use crate::{Finding, Severity};
use allocation::Fit;
use devices::{DraNode, Known};
use gpustack_protocol::nvidia::DRA_DRIVER;
use gpustack_protocol::{DeviceRequestFact, DeviceRequestKind, PathStep};
use selector::Reference;
use selector::{Environment, Selector};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// A DeviceClass as the scheduler will find it, and where it comes from.
struct Class {
    selectors: Vec<(String, Option<Origin>)>,
    /// `planned`, `live`, `the DRA driver chart (release gpu/dra)`.
    source: String,
}

/// A device request of a claim (`exactly`, or one `firstAvailable` alternative).
struct SubRequest {
    name: String,
    origin: Origin,
    class: Option<String>,
    selectors: Vec<(String, Origin)>,
    all: bool,
    count: u64,
}

struct Request {
    name: String,
    origin: Origin,
    alternatives: Vec<SubRequest>,
}

/// A claim's `matchAttribute` constraint: the requests it ties (empty: all of them) must get
/// devices that agree on the attribute (`gpu.nvidia.com/parentUUID`).
struct MatchConstraint {
    requests: Vec<String>,
    attribute: (String, String),
}

impl MatchConstraint {
    /// Whether it ties the devices of `request` when the alternative `sub` serves it.
    fn ties(&self, request: &Request, sub: &SubRequest) -> bool {
        self.requests.is_empty()
            || self.requests.contains(&request.name)
            || self.requests.contains(&sub.name)
    }
}

/// A claim's `matchAttribute` constraints, and whether it has a `distinctAttribute` one.
fn parse_constraints(fact: &DeviceRequestFact) -> (Vec<MatchConstraint>, bool) {
    let list = fact
        .spec
        .as_ref()
        .and_then(|s| s.pointer("/devices/constraints"))
        .and_then(Json::as_array);
    let mut matches = Vec::new();
    let mut distinct = false;
    for constraint in list.into_iter().flatten() {
        distinct |= constraint.get("distinctAttribute").is_some();
        let Some(name) = constraint.get("matchAttribute").and_then(Json::as_str) else {
            continue;
        };
        let attribute = match name.split_once('/') {
            Some((domain, id)) => (domain.to_owned(), id.to_owned()),
            None => (DRA_DRIVER.to_owned(), name.to_owned()),
        };
        let requests = constraint
            .get("requests")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        matches.push(MatchConstraint {
            requests,
            attribute,
        });
    }
    (matches, distinct)
}

/// One selector's verdict on one device.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Match,
    NoMatch,
    /// What the scheduler stops at.
    Error(Rc<str>),
    /// The selector reads what the plan cannot know of this device (a predicted one).
    Unknown,
}

/// How one selector fared over the devices it was evaluated on.
#[derive(Default)]
struct Tally {
    matched: usize,
    unknown: usize,
    errors: usize,
    first_error: Option<String>,
    /// The device of the first error, as `gpu-0 of node a`.
    first_device: Option<String>,
}

/// The devices of one node that one sub-request can take (`unknown`: may take).
#[derive(Default, Clone)]
struct NodeCandidates {
    sure: Vec<usize>,
    maybe: Vec<usize>,
}

/// The planned DRA driver that will serve a GPU node with `labels`, if one will.
pub(crate) fn serving(model: &Model, labels: &BTreeMap<String, String>) -> Option<String> {
    checks::serving(model, labels)
}

/// The capacity lines of the planned DRA pools: the devices each pool's nodes will publish.
pub(crate) fn capacity(model: &Model) -> Vec<(String, gpustack_protocol::CapacityChange)> {
    devices::dra_pools(model)
        .into_iter()
        .filter_map(|(address, pool, gpu)| {
            let shape = pool.after.as_ref()?;
            shape.gpus.as_ref()?;
            let planned = devices::planned(model, pool, &gpu);
            let per_node = planned.devices.len() as u32;
            let nodes = if shape.min_nodes == shape.max_nodes {
                shape.max_nodes.to_string()
            } else {
                format!("{}–{}", shape.min_nodes, shape.max_nodes)
            };
            let before = pool
                .before
                .as_ref()
                .filter(|_| !pool.new)
                .map(|b| f64::from(b.max_nodes * per_node));
            let after = f64::from(shape.max_nodes * per_node);
            if before == Some(after) {
                return None;
            }
            Some((
                address.to_owned(),
                gpustack_protocol::CapacityChange {
                    scope: format!("{} {}: {nodes} × {}", pool.kind, pool.name, shape.machine),
                    resource: format!("{DRA_DRIVER} devices (DRA)"),
                    before,
                    after: Some(after),
                    detail: format!(
                        "per node {}, published by NVIDIA's DRA driver, the device plugin off; devices from the {}",
                        planned.describe,
                        gpustack_catalog::BUILT_IN
                    ),
                    physical: None,
                },
            ))
        })
        .collect()
}

/// How much work a check did: selectors compiled, and CEL evaluations run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub compiled: usize,
    pub evaluated: usize,
    pub devices: usize,
}

pub(crate) fn findings(model: &Model, findings: &mut Vec<Finding>, memo: bool) -> Stats {
    checks::run(model, findings);
    let inputs = &model.dra;
    let claims: Vec<&(String, DeviceRequestFact)> = inputs
        .requests
        .iter()
        .filter(|(_, r)| r.kind != DeviceRequestKind::DeviceClass && r.spec.is_some())
        .collect();
    let planned_classes: Vec<&(String, DeviceRequestFact)> = inputs
        .requests
        .iter()
        .filter(|(_, r)| r.kind == DeviceRequestKind::DeviceClass && r.spec.is_some())
        .collect();
    if claims.is_empty() && planned_classes.is_empty() {
        return Stats::default();
    }
    let env = Environment::default();
    let mut checker = Checker {
        env: &env,
        ids: HashMap::new(),
        selectors: Vec::new(),
        columns: Vec::new(),
        offered: None,
        interned: HashMap::new(),
        nodes: devices::nodes(model),
        evaluated: 0,
        use_memo: memo,
    };
    let classes = classes(model, &planned_classes);
    for class in classes.values() {
        for (expression, _) in &class.selectors {
            checker.compile(expression);
        }
    }
    let requests: Vec<(&String, &DeviceRequestFact, Vec<Request>)> = claims
        .iter()
        .map(|(address, fact)| (address, fact, parse_requests(address, fact)))
        .collect();
    for (_, _, list) in &requests {
        for request in list {
            for sub in &request.alternatives {
                for (expression, _) in &sub.selectors {
                    checker.compile(expression);
                }
            }
        }
    }

    for (name, class) in &classes {
        for (expression, origin) in &class.selectors {
            let Some(origin) = origin else { continue };
            if let Some(why) = checker.selector(expression).refused() {
                findings.push(refusal(origin, &format!("DeviceClass {name}"), why));
            }
        }
    }
    let known_devices = checker.nodes.iter().any(|n| !n.devices.is_empty());
    for (address, fact, list) in &requests {
        let what = format!(
            "{} {}",
            fact.kind.name(),
            fact.namespace
                .as_ref()
                .map_or_else(|| fact.name.clone(), |ns| format!("{ns}/{}", fact.name))
        );
        let (constraints, distinct) = parse_constraints(fact);
        if distinct {
            let origin =
                Origin::new(address, &fact.attribute).join(&[key("devices"), key("constraints")]);
            findings.push(Finding {
                address: origin.address,
                path: origin.path,
                severity: Severity::Warning,
                summary: "Claim constraints not checked".into(),
                detail: format!(
                    "The distinctAttribute constraints of {what} are not checked at plan: its requests are checked as if they had none (its matchAttribute constraints are)."
                ),
            });
        }
        let mut feasible_per_request: Vec<Vec<(usize, Vec<NodeCandidates>)>> = Vec::new();
        let mut failed = false;
        for request in list {
            let mut reasons = Vec::new();
            let mut usable = Vec::new();
            for (index, sub) in request.alternatives.iter().enumerate() {
                match checker.sub_request(sub, &classes, &what, known_devices, inputs) {
                    Ok(per_node) => usable.push((index, per_node)),
                    Err(finding) => reasons.push(finding),
                }
            }
            if usable.is_empty() {
                failed = true;
                if request.alternatives.len() == 1 {
                    findings.extend(reasons);
                } else {
                    let why: Vec<String> = reasons
                        .iter()
                        .zip(&request.alternatives)
                        .map(|(f, sub)| format!("{}: {}", sub.name, f.detail))
                        .collect();
                    let severity = if reasons.iter().all(|f| f.severity == Severity::Warning) {
                        Severity::Warning
                    } else {
                        Severity::Error
                    };
                    findings.push(Finding {
                        address: (*address).clone(),
                        path: request.origin.path.clone(),
                        severity,
                        summary: "No alternative of the request can be allocated".into(),
                        detail: format!(
                            "Request {} of {what} lists {} alternatives in firstAvailable, and the scheduler can allocate none of them: {}",
                            request.name,
                            request.alternatives.len(),
                            why.join("; ")
                        ),
                    });
                }
            }
            feasible_per_request.push(usable);
        }
        if failed || (list.len() < 2 && constraints.is_empty()) {
            continue;
        }
        if let Some(detail) = checker.together(list, &feasible_per_request, &constraints) {
            findings.push(Finding {
                address: (*address).clone(),
                path: list[0].origin.path[..list[0].origin.path.len() - 1].to_vec(),
                severity: Severity::Error,
                summary: "No node can give all the claim's requests".into(),
                detail: format!("Each request of {what} can be allocated alone, but {detail}"),
            });
        }
    }
    Stats {
        compiled: checker.selectors.len(),
        evaluated: checker.evaluated,
        devices: checker.nodes.iter().map(|n| n.devices.len()).sum(),
    }
}

fn refusal(origin: &Origin, what: &str, why: &str) -> Finding {
    Finding {
        address: origin.address.clone(),
        path: origin.path.clone(),
        severity: Severity::Error,
        summary: "The API server refuses this selector".into(),
        detail: format!(
            "The CEL selector of {what} does not compile as Kubernetes compiles device selectors: {why}. Creating the object fails."
        ),
    }
}

/// The DeviceClasses a claim may name: planned, else live, else those a planned DRA driver
/// release creates.
fn classes(model: &Model, planned: &[&(String, DeviceRequestFact)]) -> BTreeMap<String, Class> {
    let inputs = &model.dra;
    let mut classes = BTreeMap::new();
    for (address, driver) in &inputs.drivers {
        let Some(values) = &driver.values else {
            continue;
        };
        for (name, expression) in devices::chart_classes(values) {
            classes.insert(
                name.to_owned(),
                Class {
                    selectors: vec![(expression.to_owned(), None)],
                    source: format!("created by the DRA driver release {address}"),
                },
            );
        }
    }
    for planned in inputs
        .chart_gpu_clusters
        .iter()
        .filter(|c| !c.cluster_policy_too)
    {
        for (name, expression) in devices::chart_classes(&planned.dra_driver) {
            classes.insert(
                name.to_owned(),
                Class {
                    selectors: vec![(expression.to_owned(), None)],
                    source: format!("created by the GPUCluster of {}", planned.origin.address),
                },
            );
        }
    }
    for (name, spec) in &inputs.live_classes {
        classes.insert(
            name.clone(),
            Class {
                selectors: class_selectors(spec, None),
                source: "live".into(),
            },
        );
    }
    for (address, fact) in planned {
        let origin = Origin::new(address, &fact.attribute);
        classes.insert(
            fact.name.clone(),
            Class {
                selectors: class_selectors(
                    fact.spec.as_ref().unwrap_or(&Json::Null),
                    Some(&origin),
                ),
                source: format!("planned by {address}"),
            },
        );
    }
    // A class the stack deletes is gone for its claims.
    for (_, fact) in inputs
        .requests
        .iter()
        .filter(|(_, r)| r.kind == DeviceRequestKind::DeviceClass && r.spec.is_none())
    {
        classes.remove(&fact.name);
    }
    classes
}

fn class_selectors(spec: &Json, origin: Option<&Origin>) -> Vec<(String, Option<Origin>)> {
    spec.get("selectors")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, s)| {
            let expression = s.pointer("/cel/expression")?.as_str()?.to_owned();
            let at = origin.map(|o| {
                o.join(&[
                    key("selectors"),
                    PathStep::Index(i),
                    key("cel"),
                    key("expression"),
                ])
            });
            Some((expression, at))
        })
        .collect()
}

fn parse_requests(address: &str, fact: &DeviceRequestFact) -> Vec<Request> {
    let origin = Origin::new(address, &fact.attribute);
    let spec = fact.spec.as_ref().unwrap_or(&Json::Null);
    let sub = |value: &Json, at: Origin, name: String| -> SubRequest {
        let selectors = value
            .get("selectors")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(j, s)| {
                Some((
                    s.pointer("/cel/expression")?.as_str()?.to_owned(),
                    at.join(&[
                        key("selectors"),
                        PathStep::Index(j),
                        key("cel"),
                        key("expression"),
                    ]),
                ))
            })
            .collect();
        SubRequest {
            name,
            class: value
                .get("deviceClassName")
                .and_then(Json::as_str)
                .map(str::to_owned),
            all: value.get("allocationMode").and_then(Json::as_str) == Some("All"),
            count: value
                .get("count")
                .and_then(|c| c.as_u64().or_else(|| c.as_str()?.parse().ok()))
                .unwrap_or(1),
            selectors,
            origin: at,
        }
    };
    spec.pointer("/devices/requests")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| {
            let at = origin.join(&[key("devices"), key("requests"), PathStep::Index(i)]);
            let name = r
                .get("name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_owned();
            let alternatives = if let Some(list) = r.get("firstAvailable").and_then(Json::as_array)
            {
                list.iter()
                    .enumerate()
                    .map(|(k, alt)| {
                        let alt_name = alt
                            .get("name")
                            .and_then(Json::as_str)
                            .map_or_else(|| format!("{name}[{k}]"), |n| format!("{name}/{n}"));
                        sub(
                            alt,
                            at.join(&[key("firstAvailable"), PathStep::Index(k)]),
                            alt_name,
                        )
                    })
                    .collect()
            } else if let Some(exactly) = r.get("exactly") {
                vec![sub(exactly, at.join(&[key("exactly")]), name.clone())]
            } else {
                // resource.k8s.io/v1beta1 wrote the request's fields on the request itself.
                vec![sub(r, at.clone(), name.clone())]
            };
            Request {
                name,
                origin: at,
                alternatives,
            }
        })
        .collect()
}

/// One selector's verdicts as far as they are known, and by what the selector reads.
struct Column {
    verdicts: Vec<Vec<Option<Verdict>>>,
    memo: HashMap<Vec<u32>, Verdict>,
}

struct Checker<'e> {
    env: &'e Environment,
    /// Each distinct expression's number, and its selector and verdicts by that number.
    ids: HashMap<String, usize>,
    selectors: Vec<Selector>,
    /// Each selector's verdicts, by node and device (created on first use).
    columns: Vec<Option<Column>>,
    /// The distinct kinds of device on offer, once they are needed.
    offered: Option<String>,
    /// Per reference, per node and device: what the device shows it, interned.
    interned: HashMap<Reference, Vec<Vec<u32>>>,
    nodes: Vec<DraNode>,
    evaluated: usize,
    use_memo: bool,
}

impl Checker<'_> {
    fn compile(&mut self, expression: &str) -> usize {
        if let Some(&id) = self.ids.get(expression) {
            return id;
        }
        let id = self.selectors.len();
        self.selectors.push(Selector::compile(expression));
        self.columns.push(None);
        self.ids.insert(expression.to_owned(), id);
        id
    }

    fn selector(&self, expression: &str) -> &Selector {
        &self.selectors[self.ids[expression]]
    }

    /// One selector's verdict on one device, computed once per plan: evaluated once per
    /// distinct value of what the selector reads, the rest copied.
    fn verdict(&mut self, id: usize, node: usize, device: usize) -> Verdict {
        if self.columns[id].is_none() {
            let references = self.selectors[id].references().clone();
            for r in references.iter().flatten() {
                self.intern(r);
            }
            self.columns[id] = Some(Column {
                verdicts: self
                    .nodes
                    .iter()
                    .map(|n| vec![None; n.devices.len()])
                    .collect(),
                memo: HashMap::new(),
            });
        }
        let Some(column) = self.columns[id].as_mut() else {
            return Verdict::Unknown;
        };
        if let Some(verdict) = &column.verdicts[node][device] {
            return verdict.clone();
        }
        let selector = &self.selectors[id];
        let d = &self.nodes[node].devices[device];
        let verdict = match selector.references() {
            None if d.known != Known::All => Verdict::Unknown,
            Some(refs) if refs.iter().any(|r| !d.knows(r)) => Verdict::Unknown,
            references => {
                let key: Option<Vec<u32>> =
                    references.as_ref().filter(|_| self.use_memo).map(|refs| {
                        refs.iter()
                            .map(|r| self.interned[r][node][device])
                            .collect()
                    });
                match key.as_ref().and_then(|k| column.memo.get(k).cloned()) {
                    Some(verdict) => verdict,
                    None => {
                        self.evaluated += 1;
                        let value = devices::cel_value(
                            self.env,
                            d,
                            references.as_ref(),
                            selector.domains(),
                        );
                        let verdict = match selector.matches(self.env, &value) {
                            Ok(true) => Verdict::Match,
                            Ok(false) => Verdict::NoMatch,
                            Err(e) => Verdict::Error(e.into()),
                        };
                        if let Some(key) = key {
                            column.memo.insert(key, verdict.clone());
                        }
                        verdict
                    }
                }
            }
        };
        column.verdicts[node][device] = Some(verdict.clone());
        verdict
    }

    /// What each device shows a reference, as small numbers equal where the values are.
    fn intern(&mut self, reference: &Reference) {
        if self.interned.contains_key(reference) {
            return;
        }
        let mut ids: HashMap<String, u32> = HashMap::new();
        let per_node = self
            .nodes
            .iter()
            .map(|node| {
                node.devices
                    .iter()
                    .map(|d| {
                        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                        *ids.entry(d.show(reference)).or_insert(next)
                    })
                    .collect()
            })
            .collect();
        self.interned.insert(reference.clone(), per_node);
    }

    /// Which devices of each node one sub-request can take, or the finding why it can take
    /// none anywhere.
    fn sub_request(
        &mut self,
        sub: &SubRequest,
        classes: &BTreeMap<String, Class>,
        what: &str,
        known_devices: bool,
        inputs: &DraInputs,
    ) -> Result<Vec<NodeCandidates>, Finding> {
        let finding = |severity, origin: &Origin, summary: &str, detail: String| Finding {
            address: origin.address.clone(),
            path: origin.path.clone(),
            severity,
            summary: summary.into(),
            detail,
        };
        for (expression, origin) in &sub.selectors {
            if let Some(why) = self.selector(expression).refused() {
                return Err(refusal(
                    origin,
                    &format!("request {} of {what}", sub.name),
                    why,
                ));
            }
        }
        let class_origin = sub.origin.join(&[key("deviceClassName")]);
        let Some(class_name) = &sub.class else {
            return Err(finding(
                Severity::Error,
                &sub.origin,
                "Request without a DeviceClass",
                format!(
                    "Request {} of {what} names no deviceClassName; the API server refuses it.",
                    sub.name
                ),
            ));
        };
        let Some(class) = classes.get(class_name) else {
            let (severity, why) = if inputs.live_read {
                (
                    Severity::Error,
                    "neither the cluster has it nor the stack creates it (nor a DRA driver release of the stack)",
                )
            } else {
                (
                    Severity::Warning,
                    "the stack does not create it, and the cluster's DeviceClasses were not read",
                )
            };
            return Err(finding(
                severity,
                &class_origin,
                "DeviceClass not found",
                format!(
                    "Request {} of {what} asks for DeviceClass {class_name}, but {why}: the scheduler leaves the claim Pending until it exists.",
                    sub.name
                ),
            ));
        };
        let nvidia = class
            .selectors
            .iter()
            .map(|(e, _)| e)
            .chain(sub.selectors.iter().map(|(e, _)| e))
            .any(|e| self.selector(e).literals().contains(DRA_DRIVER));
        if !nvidia {
            return Err(finding(
                Severity::Warning,
                &class_origin,
                "DeviceClass of another driver not checked",
                format!(
                    "DeviceClass {class_name} ({}) does not select NVIDIA's driver ({DRA_DRIVER}): gpustack knows only its devices, so request {} of {what} is not checked.",
                    class.source, sub.name
                ),
            ));
        }
        if !known_devices {
            let nodes = if inputs.live_read {
                format!("No node publishes {DRA_DRIVER} devices")
            } else {
                "The cluster's devices were not read (no cluster to read)".to_owned()
            };
            return Err(finding(
                Severity::Warning,
                &sub.origin,
                "No DRA devices known",
                format!(
                    "{nodes} and no planned pool will publish any (one does when NVIDIA's DRA driver runs there and the device plugin does not): request {} of {what} is not checked, and a pod asking for it stays Pending until devices appear.",
                    sub.name
                ),
            ));
        }
        // The class's selectors first, then the request's, as the scheduler applies them; the
        // first that leaves no device anywhere is the one to blame.
        let steps: Vec<(String, Option<Origin>, String)> = class
            .selectors
            .iter()
            .map(|(e, o)| {
                (
                    e.clone(),
                    o.clone(),
                    format!(
                        "the selector of DeviceClass {class_name} ({})",
                        class.source
                    ),
                )
            })
            .chain(sub.selectors.iter().enumerate().map(|(j, (e, o))| {
                (
                    e.clone(),
                    Some(o.clone()),
                    format!("selector {j} of request {}", sub.name),
                )
            }))
            .collect();
        let mut alive: Vec<Vec<(usize, bool)>> = self
            .nodes
            .iter()
            .map(|n| (0..n.devices.len()).map(|i| (i, true)).collect())
            .collect();
        for (expression, origin, label) in &steps {
            let id = self.ids[expression];
            let mut tally = Tally::default();
            for (node, devices) in alive.iter_mut().enumerate() {
                let mut kept = Vec::new();
                for &(device, sure) in devices.iter() {
                    match &self.verdict(id, node, device) {
                        Verdict::Match => {
                            tally.matched += 1;
                            kept.push((device, sure));
                        }
                        Verdict::NoMatch => {}
                        Verdict::Unknown => {
                            tally.unknown += 1;
                            kept.push((device, false));
                        }
                        Verdict::Error(e) => {
                            tally.errors += 1;
                            if tally.first_error.is_none() {
                                tally.first_error = Some(e.to_string());
                                let n = &self.nodes[node];
                                tally.first_device =
                                    Some(format!("{} of {}", n.devices[device].name, n.describe()));
                            }
                        }
                    }
                }
                *devices = kept;
            }
            let at = origin.clone().unwrap_or_else(|| class_origin.clone());
            if tally.errors > 0 {
                let error = tally.first_error.clone().unwrap_or_default();
                let first = tally.first_device.clone().unwrap_or_default();
                if tally.matched + tally.unknown == 0 {
                    return Err(finding(
                        Severity::Error,
                        &at,
                        "Selector fails on the devices",
                        format!(
                            "{label} of {what} stops with a CEL runtime error on {} device(s) and matches none: \"{error}\" (first on {first}). The scheduler leaves the claim Pending with this error.",
                            tally.errors
                        ),
                    ));
                }
                return Err(finding(
                    Severity::Warning,
                    &at,
                    "Selector fails on some devices",
                    format!(
                        "{label} of {what} stops with a CEL runtime error on {} device(s): \"{error}\" (first on {first}). Whether the scheduler meets one of them before a device that matches depends on the order it reads the devices in; it fails the claim when it does.",
                        tally.errors
                    ),
                ));
            }
            if tally.matched + tally.unknown == 0 {
                return Err(finding(
                    Severity::Error,
                    &at,
                    "Selector matches no device",
                    format!(
                        "{label} of {what} matches none of the {} {DRA_DRIVER} device(s) of {}: the scheduler leaves the claim Pending. Devices offered: {}.",
                        self.nodes.iter().map(|n| n.devices.len()).sum::<usize>(),
                        self.scope(),
                        self.offered()
                    ),
                ));
            }
        }
        if !alive.iter().flatten().any(|(_, sure)| *sure) {
            return Err(finding(
                Severity::Warning,
                &sub.origin,
                "Request not checked in full",
                format!(
                    "Request {} of {what} matches devices only on planned pools, through what a node publishes only once it exists (its UUIDs, PCI addresses, driver version): whether those match is known at apply, not now ({}).",
                    sub.name,
                    self.scope()
                ),
            ));
        }
        let per_node: Vec<NodeCandidates> = alive
            .iter()
            .map(|devices| NodeCandidates {
                sure: devices
                    .iter()
                    .filter(|(_, s)| *s)
                    .map(|(d, _)| *d)
                    .collect(),
                maybe: devices
                    .iter()
                    .filter(|(_, s)| !*s)
                    .map(|(d, _)| *d)
                    .collect(),
            })
            .collect();
        // The first node that can give the request is enough.
        let mut fits = Vec::new();
        for (node, c) in per_node.iter().enumerate() {
            let devices: Vec<usize> = c.sure.iter().chain(&c.maybe).copied().collect();
            let count = if sub.all {
                devices.len() as u64
            } else {
                sub.count
            };
            let fit = if devices.is_empty() || (devices.len() as u64) < count {
                Fit::No
            } else {
                allocation::fit(&self.nodes[node], &[(devices, count)])
            };
            fits.push(fit);
            if fit == Fit::Yes {
                break;
            }
        }
        if !fits.contains(&Fit::Yes) {
            if fits.contains(&Fit::Unknown) {
                return Err(finding(
                    Severity::Warning,
                    &sub.origin,
                    "Request not checked in full",
                    format!(
                        "Request {} of {what} matches partitions of GPUs that share counters, and the plan cannot tell whether {} of them fit together (a planned pool's partitions under DynamicMIG, whose counters only the node publishes, or a search that ran past its bound): known at apply.",
                        sub.name, sub.count
                    ),
                ));
            }
            let best = per_node
                .iter()
                .enumerate()
                .max_by_key(|(_, c)| c.sure.len() + c.maybe.len())
                .map(|(i, c)| (i, c.sure.len() + c.maybe.len()))
                .unwrap_or((0, 0));
            if sub.all {
                return Err(finding(
                    Severity::Error,
                    &sub.origin.join(&[key("allocationMode")]),
                    "Not every matching device can be allocated at once",
                    format!(
                        "Request {} of {what} asks for all the devices that match on one node, but on every node some of them are partitions of the same GPU that exclude each other (they share its counters: memory slices, multiprocessors), so no node can give them all ({}): the scheduler leaves the claim Pending.",
                        sub.name,
                        self.nodes[best.0].describe()
                    ),
                ));
            }
            if (best.1 as u64) < sub.count {
                return Err(finding(
                    Severity::Error,
                    &sub.origin.join(&[key("count")]),
                    "More devices than any node has",
                    format!(
                        "Request {} of {what} asks for {} devices on one node, but the most any node offers that match is {} ({}): the scheduler leaves the claim Pending.",
                        sub.name,
                        sub.count,
                        best.1,
                        self.nodes[best.0].describe()
                    ),
                ));
            }
            return Err(finding(
                Severity::Error,
                &sub.origin.join(&[key("count")]),
                "More devices than any node can give at once",
                format!(
                    "Request {} of {what} asks for {} devices on one node; {} match on {}, but they are partitions of the same GPUs that exclude each other (they share its counters: memory slices, multiprocessors) and no {} of them fit together: the scheduler leaves the claim Pending.",
                    sub.name,
                    sub.count,
                    best.1,
                    self.nodes[best.0].describe(),
                    sub.count
                ),
            ));
        }
        Ok(per_node)
    }

    /// Why no node can give every request of a claim at once (distinct devices, within the
    /// shared counters, agreeing on each `matchAttribute`), if none can.
    fn together(
        &self,
        requests: &[Request],
        usable: &[Vec<(usize, Vec<NodeCandidates>)>],
        constraints: &[MatchConstraint],
    ) -> Option<String> {
        let combinations: usize = usable.iter().map(Vec::len).product();
        for node in 0..self.nodes.len() {
            // Each combination of alternatives, in the scheduler's order.
            for mut n in 0..combinations {
                let mut tied: Vec<Vec<usize>> = Vec::new();
                let wants: Vec<(Vec<usize>, u64)> = usable
                    .iter()
                    .zip(requests)
                    .map(|(alternatives, request)| {
                        let (index, per_node) = &alternatives[n % alternatives.len()];
                        n /= alternatives.len();
                        let candidates = &per_node[node];
                        let devices: Vec<usize> = candidates
                            .sure
                            .iter()
                            .chain(&candidates.maybe)
                            .copied()
                            .collect();
                        let sub = &request.alternatives[*index];
                        tied.push(
                            constraints
                                .iter()
                                .enumerate()
                                .filter(|(_, c)| c.ties(request, sub))
                                .map(|(i, _)| i)
                                .collect(),
                        );
                        let count = if sub.all {
                            devices.len().max(1) as u64
                        } else {
                            sub.count
                        };
                        (devices, count)
                    })
                    .collect();
                if self.fits_agreeing(node, &wants, &tied, constraints) {
                    return None;
                }
            }
        }
        let agreeing = if constraints.is_empty() {
            String::new()
        } else {
            format!(
                ", the devices its constraints tie agreeing on {}",
                constraints
                    .iter()
                    .map(|c| format!("{}/{}", c.attribute.0, c.attribute.1))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Some(format!(
            "no one node has distinct devices for all {} request(s) together{agreeing}, partitions of one GPU excluding each other ({}): the scheduler leaves the claim Pending.",
            requests.len(),
            self.scope()
        ))
    }

    /// Whether `wants` fit on `node` with the devices of each constraint's requests agreeing
    /// on its attribute (a device without it cannot serve them), trying each value the
    /// candidates have. A device whose attribute the plan cannot know may agree with any.
    fn fits_agreeing(
        &self,
        node: usize,
        wants: &[(Vec<usize>, u64)],
        tied: &[Vec<usize>],
        constraints: &[MatchConstraint],
    ) -> bool {
        let devices = &self.nodes[node].devices;
        let value = |device: usize, c: &MatchConstraint| -> Option<Option<String>> {
            let d = &devices[device];
            let reference = Reference::Attribute(c.attribute.0.clone(), c.attribute.1.clone());
            if !d.knows(&reference) {
                return None;
            }
            Some(d.attributes.get(&c.attribute).map(|a| format!("{a:?}")))
        };
        // The values each constraint can take: those of the candidates it ties.
        let mut choices: Vec<Vec<String>> = Vec::new();
        for (i, c) in constraints.iter().enumerate() {
            let mut values: BTreeSet<String> = BTreeSet::new();
            for (want, ties) in wants.iter().zip(tied) {
                if ties.contains(&i) {
                    for &d in &want.0 {
                        if let Some(Some(v)) = value(d, c) {
                            values.insert(v);
                        }
                    }
                }
            }
            choices.push(values.into_iter().collect());
        }
        let assignments: usize = choices.iter().map(|c| c.len().max(1)).product();
        for mut a in 0..assignments.min(10_000) {
            let chosen: Vec<Option<&String>> = choices
                .iter()
                .map(|values| {
                    let pick = values.get(a % values.len().max(1));
                    a /= values.len().max(1);
                    pick
                })
                .collect();
            let filtered: Vec<(Vec<usize>, u64)> = wants
                .iter()
                .zip(tied)
                .map(|((candidates, count), ties)| {
                    let kept = candidates
                        .iter()
                        .copied()
                        .filter(|&d| {
                            ties.iter().all(|&i| match value(d, &constraints[i]) {
                                None => true,
                                Some(v) => v.as_ref() == chosen[i] && v.is_some(),
                            })
                        })
                        .collect();
                    (kept, *count)
                })
                .collect();
            if filtered.iter().any(|(c, n)| (c.len() as u64) < *n) {
                continue;
            }
            match allocation::fit(&self.nodes[node], &filtered) {
                Fit::No => {}
                Fit::Yes | Fit::Unknown => return true,
            }
        }
        false
    }

    fn scope(&self) -> String {
        let live = self.nodes.iter().filter(|n| n.pool.is_none()).count();
        let pools: BTreeSet<&str> = self
            .nodes
            .iter()
            .filter_map(|n| n.pool.as_deref())
            .collect();
        let mut parts = Vec::new();
        if live > 0 {
            parts.push(format!("{live} live node(s)"));
        }
        if !pools.is_empty() {
            parts.push(format!(
                "planned pool(s) {} (their devices from the {})",
                pools.into_iter().collect::<Vec<_>>().join(", "),
                gpustack_catalog::BUILT_IN
            ));
        }
        parts.join(" and ")
    }

    /// The distinct kinds of device on offer, for the reader to see what would match.
    fn offered(&mut self) -> String {
        if let Some(offered) = &self.offered {
            return offered.clone();
        }
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for node in &self.nodes {
            for d in &node.devices {
                *kinds.entry(d.summary()).or_default() += 1;
            }
        }
        let offered = kinds
            .into_iter()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.offered = Some(offered.clone());
        offered
    }
}

#[cfg(test)]
mod tests;
