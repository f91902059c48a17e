//! Remote state backends against the test world: the kubernetes backend on the local cluster,
//! the s3 backend on moto. Each runs the same scenarios through the gpustack binary: two runs
//! racing for the lock, a killed holder whose lock expires, a run whose lock was forced away
//! (it stops), and migration between backends; and on the backends directly, a stale writer
//! refused by compare-and-swap. Then, for each backend: a holder whose clock is far behind but
//! which renews keeps its lock, and one that stops renewing loses it only after a waiter has
//! watched it for a TTL; a holder paused until its lock was taken over starts no provider call
//! and writes no state when it wakes; an interrupted run releases its lock. And on s3 behind a
//! fault-injecting proxy, a renewal whose answer was lost is not taken for a lost lock.

use gpustack_state::KubernetesConfig;
use gpustack_state::{Backend, BackendConfig, ResourceMode, ResourceState, State, StateError};
use gpustack_tests::cluster::TestCluster;
use gpustack_tests::faults::{Fault, FaultPlan, FaultProxy};
use gpustack_tests::moto::Moto;
use gpustack_tests::{gpustack_command, stderr, stdout};
use std::path::Path;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// Where a scenario keeps its state: the backend block and the environment to reach it.
struct Remote {
    block: String,
    env: Vec<(String, String)>,
}

/// The lock as another machine's run writes it, for what no run on this machine can stage.
enum Holder {
    Kubernetes {
        kubeconfig: std::path::PathBuf,
        namespace: String,
        lease: String,
    },
    S3 {
        endpoint: String,
        bucket: String,
        key: String,
    },
}

const SKEWED_ID: &str = "4b1d0000-0000-4000-8000-00000000skew";

/// Seconds since the epoch of 2001-01-01: the skewed holder's clock is 25 years behind.
const LONG_AGO: i64 = 978_307_200;

impl Holder {
    /// Writes the `n`-th renewal of a lock held by `skewed@elsewhere` (pid 4242, TTL 4s)
    /// whose every time is far in the past: each write differs from the one before, as every
    /// renewal does, and none says the lock was renewed recently.
    async fn renew_skewed(&self, n: i64) {
        let info = serde_json::json!({
            "id": SKEWED_ID,
            "operation": "apply",
            "who": "skewed@elsewhere",
            "pid": 4242,
            "created": "2001-01-01T00:00:00Z",
            "version": "0.1.0",
        });
        match self {
            Holder::Kubernetes {
                kubeconfig,
                namespace,
                lease,
            } => {
                use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
                use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
                let settings = gpustack_connect::kubernetes::KubeSettings {
                    config_paths: vec![kubeconfig.display().to_string()],
                    ..Default::default()
                };
                let client = gpustack_connect::kubernetes::client(&settings)
                    .await
                    .unwrap();
                let leases: kube::Api<Lease> = kube::Api::namespaced(client, namespace);
                let at = |seconds: i64| {
                    MicroTime(k8s_openapi::jiff::Timestamp::from_second(seconds).unwrap())
                };
                let existing = leases.get_opt(lease).await.unwrap();
                let written = Lease {
                    metadata: ObjectMeta {
                        name: Some(lease.clone()),
                        annotations: Some(
                            [("gpustack.dev/lock-info".to_owned(), info.to_string())].into(),
                        ),
                        resource_version: existing
                            .as_ref()
                            .and_then(|l| l.metadata.resource_version.clone()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(SKEWED_ID.to_owned()),
                        lease_duration_seconds: Some(4),
                        acquire_time: Some(at(LONG_AGO)),
                        renew_time: Some(at(LONG_AGO + n)),
                        ..Default::default()
                    }),
                };
                let params = kube::api::PostParams::default();
                match existing {
                    None => leases.create(&params, &written).await.map(|_| ()),
                    Some(_) => leases.replace(lease, &params, &written).await.map(|_| ()),
                }
                .unwrap();
            }
            Holder::S3 {
                endpoint,
                bucket,
                key,
            } => {
                let mut record = info;
                record["renewed"] = (LONG_AGO + n).into();
                record["ttl_seconds"] = 4.into();
                record["write"] = format!("skewed-{n}").into();
                s3_client(endpoint)
                    .await
                    .put_object()
                    .bucket(bucket)
                    .key(format!("{key}.lock"))
                    .body(record.to_string().into_bytes().into())
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

async fn s3_client(endpoint: &str) -> aws_sdk_s3::Client {
    let settings = gpustack_connect::aws::AwsSettings {
        region: Some("us-east-1".into()),
        profile: None,
        endpoint: Some(endpoint.to_owned()),
    };
    let shared = gpustack_connect::aws::loader(&settings)
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "test",
        ))
        .load()
        .await;
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&shared)
            .force_path_style(true)
            .build(),
    )
}

/// The skewed holder, renewing every second on a thread of its own until stopped.
struct SkewedHolder {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SkewedHolder {
    /// Returns once the lock is held.
    fn start(holder: Holder) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (held, is_held) = std::sync::mpsc::channel();
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut n = 0;
            while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
                runtime.block_on(holder.renew_skewed(n));
                if n == 0 {
                    held.send(()).unwrap();
                }
                n += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        is_held.recv().unwrap();
        SkewedHolder { stop, thread }
    }

    /// Stops renewing, as a holder that crashed or lost its network.
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap();
    }
}

impl Remote {
    fn env(&self) -> Vec<(&str, &str)> {
        let mut env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        env.push(("GPUSTACK_TEST_PROVIDER", "1"));
        env
    }

    fn command(&self, dir: &Path, args: &[&str]) -> std::process::Command {
        gpustack_command(dir, args, &self.env())
    }

    fn run(&self, dir: &Path, args: &[&str]) -> (i32, String, String) {
        let out = self.command(dir, args).output().unwrap();
        (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
    }

    fn spawn(&self, dir: &Path, args: &[&str]) -> Child {
        self.command(dir, args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// One test_object whose every provider call takes `latency_ms`, so that an apply holds the
/// lock for a few seconds.
fn write_stack(dir: &Path, remote: &Remote, latency_ms: u64, value: &str) {
    std::fs::write(
        dir.join("main.hcl"),
        format!(
            "gpustack {{\n{}\n}}\n\nprovider \"test\" {{\n  latency_ms = {latency_ms}\n  world      = \"world.json\"\n}}\n\nresource \"test_object\" \"slow\" {{\n  name  = \"slow\"\n  value = \"{value}\"\n}}\n",
            remote.block
        ),
    )
    .unwrap();
}

fn exit_code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

/// Polls until the state is locked by `child`, with a force-unlock of a made-up ID: it takes
/// no lock itself and must refuse, naming the holder. Returns the message.
fn wait_until_locked(remote: &Remote, dir: &Path, child: &mut Child) -> String {
    wait_until_locked_for(remote, dir, child, "apply")
}

fn wait_until_locked_for(
    remote: &Remote,
    dir: &Path,
    child: &mut Child,
    operation: &str,
) -> String {
    let holder = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the {operation} ended before it was seen holding the lock:\n{err}");
        }
        let (code, _, err) = remote.run(dir, &["force-unlock", "not-the-id"]);
        if code == 1 && err.contains("does not match the lock held by") {
            assert!(err.contains(&format!("(pid {holder})")), "{err}");
            assert!(err.contains(&format!("for {operation}")), "{err}");
            return err;
        }
        assert!(
            Instant::now() < deadline,
            "the {operation} never took the lock: {err}"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn lock_id(message: &str) -> String {
    message
        .rsplit("lock ID ")
        .next()
        .and_then(|rest| rest.split(['.', ' ', '\n']).next())
        .unwrap()
        .to_owned()
}

/// Two applies start together: one wins, the other fails fast naming the winner.
fn two_runs_race_for_the_lock(remote: &Remote, dir: &Path) {
    write_stack(dir, remote, 1500, "v1");
    let start = Instant::now();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let child = remote.spawn(dir, &["apply", "--auto-approve"]);
            let pid = child.id();
            std::thread::spawn(move || {
                let out = child.wait_with_output().unwrap();
                (pid, out, start.elapsed())
            })
        })
        .collect();
    let mut results: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    results.sort_by_key(|(_, out, _)| exit_code(out));
    let (winner_pid, winner, winner_time) = &results[0];
    let (_, loser, loser_time) = &results[1];
    assert_eq!(exit_code(winner), 0, "{}", stderr(winner));
    assert_eq!(
        exit_code(loser),
        1,
        "exactly one run may win:\n{}",
        stderr(loser)
    );
    let err = stderr(loser);
    assert!(
        err.contains("the state is locked by") && err.contains(&format!("(pid {winner_pid})")),
        "the loser must name the holder:\n{err}"
    );
    assert!(err.contains("gpustack force-unlock"), "{err}");
    assert!(
        loser_time < winner_time,
        "the loser must fail fast, not wait for the winner ({loser_time:?} vs {winner_time:?})"
    );
}

/// A holder killed with SIGKILL never releases its lock; after the TTL the next run takes it
/// over and says whose lock expired.
fn a_killed_holders_lock_expires(remote: &Remote, dir: &Path) {
    write_stack(dir, remote, 3000, "v2");
    let mut holder = remote.spawn(dir, &["apply", "--auto-approve"]);
    let pid = holder.id();
    wait_until_locked(remote, dir, &mut holder);
    holder.kill().unwrap();
    holder.wait().unwrap();
    let started = Instant::now();
    let (code, out, err) = remote.run(dir, &["plan", "--lock-timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("expired")
            && err.contains(&format!("(pid {pid})"))
            && err.contains("for apply"),
        "the run must say whose lock expired:\n{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the lock must expire after its TTL"
    );
}

/// A run whose lock was forced away notices at its next renewal and starts nothing more; the
/// run that took the lock applies. (That a write from a run that lost its lock is refused is
/// tested on the backends directly.)
fn a_run_that_lost_its_lock_stops(remote: &Remote, dir: &Path) {
    write_stack(dir, remote, 2000, "v3");
    let mut first = remote.spawn(dir, &["apply", "--auto-approve"]);
    let locked = wait_until_locked(remote, dir, &mut first);
    let (code, out, err) = remote.run(dir, &["force-unlock", &lock_id(&locked)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Released the lock"), "{out}");
    write_stack(dir, remote, 2000, "v4");
    let second = remote.spawn(dir, &["apply", "--auto-approve"]);
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    assert_eq!(exit_code(&first), 1, "{}", stderr(&first));
    assert!(
        stderr(&first).contains("this run no longer holds the state lock"),
        "{}",
        stderr(&first)
    );
    assert_eq!(exit_code(&second), 0, "{}", stderr(&second));
    let (code, pulled, err) = remote.run(dir, &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert!(pulled.contains("\"value\": \"v4\""), "{pulled}");
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

fn not_locked(remote: &Remote, dir: &Path) {
    let (code, _, err) = remote.run(dir, &["force-unlock", "not-the-id"]);
    assert!(
        code == 1 && err.contains("the state is not locked"),
        "the lock must be gone at once:\n{err}"
    );
}

/// A holder on a machine whose clock is 25 years behind renews its lock: every time it writes
/// is far in the past, so a waiter that compared them with its own clock would take the lock
/// over at once. No waiter does while the holder renews; once it stops, the next run takes
/// the lock over after watching it unrenewed for its TTL (4s), and not before.
fn a_renewing_holder_with_a_skewed_clock_keeps_its_lock(
    remote: &Remote,
    holder: Holder,
    dir: &Path,
) {
    write_stack(dir, remote, 0, "skew");
    let skewed = SkewedHolder::start(holder);
    let started = Instant::now();
    let (code, out, err) = remote.run(dir, &["plan", "--lock-timeout", "10s"]);
    assert_eq!(
        code, 1,
        "a lock its holder renews must not be taken over:\n{out}{err}"
    );
    assert!(
        err.contains("the state is locked by skewed@elsewhere (pid 4242) for apply"),
        "{err}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(10),
        "the run waits out its --lock-timeout"
    );
    skewed.stop();
    let stopped = Instant::now();
    let (code, out, err) = remote.run(dir, &["plan", "--lock-timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("expired") && err.contains("(pid 4242)"),
        "the run must say whose lock expired:\n{err}"
    );
    assert!(
        stopped.elapsed() >= Duration::from_secs(4),
        "taken over only after a TTL of watching it unrenewed, not after {:?}",
        stopped.elapsed()
    );
}

/// A holder paused (SIGSTOP: a stalled machine, a long pause) until a waiting run has taken
/// its lock over: when it wakes it finishes the provider call it was in, starts no other and
/// does not write the state; what it did is kept in errored.gpustack-state.json. (The run that
/// took over only plans, so that no compare-and-swap would refuse the holder's write.)
fn a_paused_holder_that_lost_its_lock_stops_and_writes_no_state(
    remote: &Remote,
    _: Holder,
    dir: &Path,
) {
    std::fs::write(
        dir.join("main.hcl"),
        format!(
            "gpustack {{\n{}\n}}\n\nprovider \"test\" {{\n  latency_ms      = 1000\n  max_concurrency = 1\n  world           = \"world.json\"\n  journal         = \"journal.log\"\n}}\n\nresource \"test_object\" \"p\" {{\n  count = 4\n  name  = \"p${{count.index}}\"\n}}\n",
            remote.block
        ),
    )
    .unwrap();
    let created = || {
        std::fs::read_to_string(dir.join("journal.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let mut holder = remote.spawn(dir, &["apply", "--auto-approve"]);
    wait_until_locked(remote, dir, &mut holder);
    let deadline = Instant::now() + Duration::from_secs(60);
    while created() == 0 {
        assert!(
            holder.try_wait().unwrap().is_none(),
            "the apply ended before its first create"
        );
        assert!(
            Instant::now() < deadline,
            "the apply never created anything"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&holder, "STOP");
    let created_before = created();
    let (code, out, err) = remote.run(dir, &["plan", "--lock-timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("expired"), "{err}");
    signal(&holder, "CONT");
    let out = holder.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(exit_code(&out), 1, "{err}");
    assert!(err.contains("no longer holds the state lock"), "{err}");
    assert!(
        created() <= created_before + 1 && created() < 4,
        "after the pause only the call in flight may finish: {} created, {created_before} before the pause\n{err}",
        created()
    );
    let (code, pulled, err) = remote.run(dir, &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !pulled.contains("test_object.p"),
        "the holder must not write the state after losing its lock:\n{pulled}"
    );
    let kept = std::fs::read_to_string(dir.join("errored.gpustack-state.json")).unwrap();
    assert!(kept.contains("test_object.p[0]"), "{kept}");
}

/// Ctrl-C or SIGTERM while a run holds the lock: a plan releases it at the first signal and
/// exits 143 (SIGTERM); an apply stops starting operations at the first Ctrl-C and releases
/// the lock at the second, exiting 130. Either way the lock is gone at once, not after its TTL.
fn an_interrupted_run_releases_its_lock(remote: &Remote, _: Holder, dir: &Path) {
    write_stack(dir, remote, 3000, "interrupted");
    let mut plan = remote.spawn(dir, &["plan"]);
    wait_until_locked_for(remote, dir, &mut plan, "plan");
    signal(&plan, "TERM");
    let out = plan.wait_with_output().unwrap();
    assert_eq!(exit_code(&out), 143, "{}", stderr(&out));
    not_locked(remote, dir);

    let mut apply = remote.spawn(dir, &["apply", "--auto-approve"]);
    wait_until_locked(remote, dir, &mut apply);
    signal(&apply, "INT");
    std::thread::sleep(Duration::from_millis(500));
    signal(&apply, "INT");
    let out = apply.wait_with_output().unwrap();
    assert_eq!(exit_code(&out), 130, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the state lock was released"),
        "{}",
        stderr(&out)
    );
    not_locked(remote, dir);
}

/// Runs a scenario on a namespace of its own; no Lease is held after it (a released lock
/// leaves its Lease, holder cleared).
fn on_kubernetes(name: &str, scenario: impl FnOnce(&Remote, Holder, &Path)) {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, name);
    let remote = kubernetes_remote(&cluster, &namespace.name, name);
    let holder = Holder::Kubernetes {
        kubeconfig: cluster.kubeconfig.clone(),
        namespace: namespace.name.clone(),
        lease: format!("gpustack-lock-{name}"),
    };
    let dir = tempfile::tempdir().unwrap();
    scenario(&remote, holder, dir.path());
    let holders = cluster.kubectl_ok(&[
        "get",
        "leases",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.items[*].spec.holderIdentity}",
    ]);
    assert!(holders.trim().is_empty(), "no Lease is held: {holders}");
}

/// Runs a scenario on a moto server and bucket of its own; no lock object is left after it.
fn on_s3(name: &str, scenario: impl FnOnce(&Remote, Holder, &Path)) {
    let moto = Moto::start(&format!("{name}-{}", std::process::id()));
    moto.boto3(&format!(
        r#"boto3.client("s3", **kw).create_bucket(Bucket="{name}")"#
    ));
    let remote = s3_remote(&moto, name, "state.json");
    let holder = Holder::S3 {
        endpoint: moto.endpoint.clone(),
        bucket: name.to_owned(),
        key: "state.json".to_owned(),
    };
    let dir = tempfile::tempdir().unwrap();
    scenario(&remote, holder, dir.path());
    let keys = moto.boto3(&format!(
        r#"print("\n".join(o["Key"] for o in boto3.client("s3", **kw).list_objects_v2(Bucket="{name}").get("Contents", [])))"#
    ));
    assert!(
        !keys.contains("state.json.lock"),
        "no lock object is left: {keys}"
    );
}

#[test]
fn kubernetes_lock_of_a_renewing_holder_with_a_skewed_clock_is_never_taken_over() {
    on_kubernetes(
        "lock-skew",
        a_renewing_holder_with_a_skewed_clock_keeps_its_lock,
    );
}

#[test]
fn s3_lock_of_a_renewing_holder_with_a_skewed_clock_is_never_taken_over() {
    on_s3(
        "lock-skew",
        a_renewing_holder_with_a_skewed_clock_keeps_its_lock,
    );
}

#[test]
fn kubernetes_a_paused_holder_that_lost_its_lock_stops_and_writes_no_state() {
    on_kubernetes(
        "lock-paused",
        a_paused_holder_that_lost_its_lock_stops_and_writes_no_state,
    );
}

#[test]
fn s3_a_paused_holder_that_lost_its_lock_stops_and_writes_no_state() {
    on_s3(
        "lock-paused",
        a_paused_holder_that_lost_its_lock_stops_and_writes_no_state,
    );
}

#[test]
fn kubernetes_an_interrupted_run_releases_its_lock() {
    on_kubernetes("lock-interrupted", an_interrupted_run_releases_its_lock);
}

#[test]
fn s3_an_interrupted_run_releases_its_lock() {
    on_s3("lock-interrupted", an_interrupted_run_releases_its_lock);
}

/// The first renewal's answer is lost after moto took the write; the SDK retries it, and the
/// retry fails its `If-Match` (412) because the first attempt changed the ETag. The run finds
/// its own write in the lock object, keeps the lock and applies.
#[test]
fn s3_a_renewal_whose_answer_was_lost_is_not_a_lost_lock() {
    let moto = Moto::start(&format!("lost-answer-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="lost-answer")"#);
    let lock_puts = "PUT /lost-answer/state.json.lock";
    let proxy = FaultProxy::start(
        &moto.endpoint,
        FaultPlan {
            matching: lock_puts.into(),
            faults: [Fault::Pass, Fault::LoseAnswer].into(),
        },
    );
    let remote = Remote {
        block: s3_block(&proxy.endpoint, "lost-answer", "state.json"),
        ..s3_remote(&moto, "lost-answer", "state.json")
    };
    let dir = tempfile::tempdir().unwrap();
    write_stack(dir.path(), &remote, 2500, "renewed");
    let (code, out, err) = remote.run(dir.path(), &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("no longer holds the state lock"), "{err}");
    let (puts, faulted) = proxy.count(lock_puts);
    assert_eq!(faulted, 1, "the renewal's answer was lost once");
    assert!(
        puts >= 3,
        "the lock, the renewal whose answer was lost and its retry: {puts} PUTs"
    );
    let (code, pulled, err) = remote.run(dir.path(), &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert!(pulled.contains("\"value\": \"renewed\""), "{pulled}");
}

fn scenarios(remote: &Remote) {
    let dir = tempfile::tempdir().unwrap();
    two_runs_race_for_the_lock(remote, dir.path());
    a_killed_holders_lock_expires(remote, dir.path());
    a_run_that_lost_its_lock_stops(remote, dir.path());
    assert!(
        !dir.path().join(".gpustack/state.json").exists(),
        "a remote backend must leave no local state"
    );
}

fn test_cluster() -> TestCluster {
    TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG")
}

/// A namespace of its own, deleted afterwards.
struct Namespace<'c> {
    cluster: &'c TestCluster,
    name: String,
}

impl<'c> Namespace<'c> {
    fn new(cluster: &'c TestCluster, prefix: &str) -> Self {
        let name = format!("{prefix}-{}", std::process::id());
        cluster.kubectl_ok(&["create", "namespace", &name]);
        Namespace { cluster, name }
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let _ = self
            .cluster
            .kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
    }
}

fn kubernetes_remote(cluster: &TestCluster, namespace: &str, suffix: &str) -> Remote {
    Remote {
        block: format!(
            "  backend \"kubernetes\" {{\n    namespace     = \"{namespace}\"\n    secret_suffix = \"{suffix}\"\n    config_path   = \"{}\"\n    lock_ttl      = \"4s\"\n  }}",
            cluster.kubeconfig.display()
        ),
        env: vec![],
    }
}

#[test]
fn kubernetes_backend_locks_with_an_expiring_lease_and_stops_a_run_that_lost_it() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "state-lock");
    let remote = kubernetes_remote(&cluster, &namespace.name, "race");
    scenarios(&remote);
    let secrets = cluster.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        &namespace.name,
        "-l",
        "gpustack.dev/state=race",
        "-o",
        "name",
    ]);
    assert!(secrets.contains("secret/gpustack-state-race"), "{secrets}");
    // Released locks keep their Lease, held by no one: only the first run creates it.
    let leases = cluster.kubectl_ok(&["get", "leases", "-n", &namespace.name, "-o", "name"]);
    assert_eq!(
        leases.trim(),
        "lease.coordination.k8s.io/gpustack-lock-race"
    );
    let holders = cluster.kubectl_ok(&[
        "get",
        "leases",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.items[*].spec.holderIdentity}",
    ]);
    assert!(
        holders.trim().is_empty(),
        "every finished run releases its lock: {holders}"
    );
}

/// Incompressible text, so that the state outgrows one Secret even gzip-compressed.
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdefghijklmnopqrstuvwxyz"[(x % 36) as usize])
        })
        .collect()
}

/// As written: states are stored with their resources in address order.
fn big_state(serial: u64, lineage: &str) -> State {
    State::decode(&unsorted_big_state(serial, lineage).encode()).unwrap()
}

fn unsorted_big_state(serial: u64, lineage: &str) -> State {
    let mut state = State::new(lineage, "test");
    state.serial = serial;
    for i in 0..24 {
        state.resources.push(ResourceState {
            address: format!("test_object.big[{i}]"),
            mode: ResourceMode::Managed,
            type_name: "test_object".into(),
            provider: "provider.test".into(),
            attributes: serde_json::json!({ "name": format!("big{i}"), "value": noise(serial * 100 + i, 100_000) }),
            sensitive_paths: vec![],
            dependencies: vec![],
            tainted: false,
            skip_destroy: false,
            seed_serial: None,
        });
    }
    state
}

/// Two backend handles both read serial 1; one writes serial 2, so the other's write is stale
/// and must be refused, leaving serial 2 in place.
async fn a_stale_writer_is_refused(writer: &dyn Backend, reader: &dyn Backend, lineage: &str) {
    let first = big_state(1, lineage);
    writer.write(&first).await.unwrap();
    assert_eq!(reader.read().await.unwrap().unwrap(), first);
    assert_eq!(writer.read().await.unwrap().unwrap(), first);
    let second = big_state(2, lineage);
    writer.write(&second).await.unwrap();
    let refused = reader.write(&big_state(2, lineage)).await;
    assert!(
        matches!(refused, Err(StateError::Conflict { .. })),
        "a stale write must be refused: {refused:?}"
    );
    assert_eq!(reader.read().await.unwrap().unwrap(), second);
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_backend_refuses_a_stale_writer() {
    let moto = Moto::start(&format!("stale-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="stale")"#);
    let config = gpustack_state::S3Config {
        bucket: "stale".into(),
        key: "state.json".into(),
        region: Some("us-east-1".into()),
        endpoint: Some(moto.endpoint.clone()),
        profile: None,
        use_path_style: Some(true),
        lock_ttl: None,
        workspace_key_prefix: None,
    };
    let credentials = || {
        Some(aws_sdk_s3::config::SharedCredentialsProvider::new(
            aws_sdk_s3::config::Credentials::new("test", "test", None, None, "test"),
        ))
    };
    let writer = gpustack_backends::s3::S3Backend::connect_with(&config, credentials())
        .await
        .unwrap();
    let reader = gpustack_backends::s3::S3Backend::connect_with(&config, credentials())
        .await
        .unwrap();
    assert!(writer.read().await.unwrap().is_none());
    assert!(reader.read().await.unwrap().is_none());
    a_stale_writer_is_refused(&writer, &reader, &gpustack_state::new_lineage()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubernetes_state_larger_than_a_secret_round_trips_and_a_stale_writer_is_refused() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "state-big");
    let config = BackendConfig::Kubernetes(KubernetesConfig {
        namespace: namespace.name.clone(),
        secret_suffix: "big".into(),
        config_path: Some(cluster.kubeconfig.display().to_string()),
        config_paths: Vec::new(),
        context: None,
        cluster: None,
        user: None,
        in_cluster: None,
        lock_ttl: None,
    });
    let here = Path::new(".");
    let writer = gpustack_backends::open(&config, here).await.unwrap();
    assert!(writer.read().await.unwrap().is_none());
    let lineage = gpustack_state::new_lineage();
    let first = big_state(1, &lineage);
    assert!(first.encode().len() > 2 * 1024 * 1024);
    writer.write(&first).await.unwrap();

    let generations = |cluster: &TestCluster| {
        let out = cluster.kubectl_ok(&[
            "get",
            "secrets",
            "-n",
            &namespace.name,
            "-l",
            "gpustack.dev/state=big,gpustack.dev/generation",
            "-o",
            "jsonpath={range .items[*]}{.metadata.labels.gpustack\\.dev/generation}{\"\\n\"}{end}",
        ]);
        let all: Vec<String> = out.lines().map(str::to_owned).collect();
        let mut distinct = all.clone();
        distinct.sort();
        distinct.dedup();
        (all.len(), distinct.len())
    };
    let (chunks, kinds) = generations(&cluster);
    assert!(
        chunks >= 2,
        "a state of {} bytes must be split",
        first.encode().len()
    );
    assert_eq!(kinds, 1);

    let reader = gpustack_backends::open(&config, here).await.unwrap();
    assert_eq!(reader.read().await.unwrap().unwrap(), first);

    // Both have read serial 1; the writer writes serial 2, so the reader's write is stale.
    let second = big_state(2, &lineage);
    writer.write(&second).await.unwrap();
    let stale = big_state(2, &lineage);
    let refused = reader.write(&stale).await;
    assert!(
        matches!(refused, Err(StateError::Conflict { .. })),
        "a stale write must be refused: {refused:?}"
    );
    assert_eq!(reader.read().await.unwrap().unwrap(), second);
    let (chunks_after, kinds_after) = generations(&cluster);
    assert_eq!(
        (chunks_after, kinds_after),
        (chunks, 1),
        "the previous generation's chunks are deleted"
    );

    // Shrinking back into one Secret removes the chunks.
    let mut small = State::new(&lineage, "test");
    small.serial = 3;
    reader.write(&small).await.unwrap();
    assert_eq!(writer.read().await.unwrap().unwrap(), small);
    assert_eq!(generations(&cluster).0, 0);
}

fn s3_block(endpoint: &str, bucket: &str, key: &str) -> String {
    format!(
        "  backend \"s3\" {{\n    bucket         = \"{bucket}\"\n    key            = \"{key}\"\n    region         = \"us-east-1\"\n    endpoint       = \"{endpoint}\"\n    use_path_style = true\n    lock_ttl       = \"4s\"\n  }}"
    )
}

fn s3_remote(moto: &Moto, bucket: &str, key: &str) -> Remote {
    Remote {
        block: s3_block(&moto.endpoint, bucket, key),
        env: moto
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    }
}

#[test]
fn s3_backend_on_moto_locks_with_conditional_writes_and_stops_a_run_that_lost_it() {
    let moto = Moto::start(&format!("backends-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="gpustack-state")"#);
    let remote = s3_remote(&moto, "gpustack-state", "stacks/race/state.json");
    scenarios(&remote);
    let keys = moto.boto3(
        r#"print("\n".join(o["Key"] for o in boto3.client("s3", **kw).list_objects_v2(Bucket="gpustack-state").get("Contents", [])))"#,
    );
    assert!(keys.contains("stacks/race/state.json"), "{keys}");
    assert!(
        !keys.contains("state.json.lock"),
        "every finished run deletes its lock object: {keys}"
    );
}

/// local → kubernetes → s3, each step with `init --migrate-state`, the state unchanged.
#[test]
fn init_migrates_the_state_between_backends() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "state-migrate");
    let moto = Moto::start(&format!("migrate-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="migrated")"#);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let local = Remote {
        block: String::new(),
        env: moto
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    };
    write_stack(d, &local, 0, "m1");
    let (code, out, err) = local.run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    // What state pull shows of it: the state as it is, without its digest key.
    let mut original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join(".gpustack/state.json")).unwrap()).unwrap();
    assert!(
        original
            .as_object_mut()
            .unwrap()
            .remove("digest_key")
            .is_some()
    );
    let pulled_state = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();

    let kubernetes = kubernetes_remote(&cluster, &namespace.name, "migrated");
    let kubernetes = Remote {
        env: local.env.clone(),
        ..kubernetes
    };
    write_stack(d, &kubernetes, 0, "m1");
    let (code, _, err) = kubernetes.run(d, &["plan"]);
    assert_eq!(
        code, 1,
        "planning from an empty new backend must be refused"
    );
    assert!(err.contains("gpustack init --migrate-state"), "{err}");
    let (code, _, err) = kubernetes.run(d, &["init"]);
    assert_eq!(
        code, 1,
        "init without --migrate-state must not leave the state behind"
    );
    assert!(err.contains("--migrate-state"), "{err}");
    let (code, out, err) = kubernetes.run(d, &["init", "--migrate-state"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Copied the state (serial"), "{out}");
    let (code, pulled, err) = kubernetes.run(d, &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(pulled_state(&pulled), original);
    let (code, out, err) = kubernetes.run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "nothing changes after a migration:\n{out}{err}");

    let s3 = s3_remote(&moto, "migrated", "prod/state.json");
    write_stack(d, &s3, 0, "m1");
    let (code, _, err) = s3.run(d, &["plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("changed from kubernetes"), "{err}");
    let (code, out, err) = s3.run(d, &["init", "--migrate-state"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, pulled, err) = s3.run(d, &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(pulled_state(&pulled), original);
    let (code, out, err) = s3.run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("0 added, 0 changed, 0 destroyed") || out.contains("No changes"),
        "{out}"
    );
}

/// The GitOps flow: plan on one runner, apply the saved plan on another (a fresh clone, no
/// local state), and refuse a plan that was made before something else was applied.
#[test]
fn a_plan_made_in_one_clone_applies_from_a_fresh_clone_and_a_stale_plan_is_refused() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "gitops");
    let remote = kubernetes_remote(&cluster, &namespace.name, "gitops");
    let stack = format!(
        "gpustack {{\n{}\n}}\n\nvariable \"replicas\" {{\n  type    = number\n  default = 4\n}}\n\nprovider \"kubernetes\" {{\n  config_path = \"{}\"\n}}\n\nresource \"kubernetes_manifest\" \"sharing\" {{\n  manifest = {{\n    apiVersion = \"v1\"\n    kind       = \"ConfigMap\"\n    metadata   = {{ name = \"time-slicing-config\", namespace = \"{}\" }}\n    data       = {{ replicas = tostring(var.replicas) }}\n  }}\n}}\n",
        remote.block,
        cluster.kubeconfig.display(),
        namespace.name
    );
    let clone = |root: &Path| {
        std::fs::create_dir_all(root.join("stacks/gpu")).unwrap();
        std::fs::write(root.join("stacks/gpu/main.hcl"), &stack).unwrap();
    };
    let work = tempfile::tempdir().unwrap();
    let plans = work.path().join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    let first_runner = work.path().join("runner-1");
    clone(&first_runner);
    let (code, out, err) = remote.run(
        &first_runner,
        &[
            "plan",
            "stacks/gpu",
            "--out",
            "../plans/pr.bin",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    let (code, comment, err) =
        remote.run(&first_runner, &["show", "../plans/pr.bin", "--markdown"]);
    assert_eq!(code, 0, "{err}");
    assert!(comment.contains("kubernetes_manifest.sharing"), "{comment}");
    std::fs::remove_dir_all(&first_runner).unwrap();

    let replicas = || {
        cluster.kubectl_ok(&[
            "get",
            "configmap",
            "time-slicing-config",
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.data.replicas}",
        ])
    };
    let second_runner = work.path().join("runner-2");
    clone(&second_runner);
    let (code, out, err) = remote.run(&second_runner, &["apply", "../plans/pr.bin"]);
    assert_eq!(
        code, 0,
        "the saved plan applies from a fresh clone:\n{out}{err}"
    );
    assert!(out.contains("1 added"), "{out}");
    let data = replicas();
    assert_eq!(data, "4");
    assert!(
        !second_runner
            .join("stacks/gpu/.gpustack/state.json")
            .exists()
    );

    // Two pull requests plan against the same state; the first to merge wins, the other's
    // plan is stale.
    for (replicas, file) in [("8", "../plans/a.bin"), ("2", "../plans/b.bin")] {
        let (code, out, err) = remote.run(
            &second_runner,
            &[
                "plan",
                "stacks/gpu",
                "--var",
                &format!("replicas={replicas}"),
                "--out",
                file,
            ],
        );
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, out, err) = remote.run(&second_runner, &["apply", "../plans/b.bin"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = remote.run(&second_runner, &["apply", "../plans/a.bin"]);
    assert_eq!(code, 1, "a stale plan must be refused:\n{out}{err}");
    assert!(err.contains("the saved plan is stale"), "{err}");
    let data = replicas();
    assert_eq!(data, "2", "the refused plan changed nothing");
}

/// A GitOps pair of runners sharing a remote state: the stack is written into each fresh
/// clone by `clone`, and `plans` is where the reviewed plan waits between them.
struct Pipeline {
    _work: tempfile::TempDir,
    remote: Remote,
    plans: std::path::PathBuf,
    first: std::path::PathBuf,
    second: std::path::PathBuf,
    /// A test world both runners see (the infrastructure, outside every clone).
    world: std::path::PathBuf,
}

impl Pipeline {
    fn new(remote: Remote) -> Self {
        let work = tempfile::tempdir().unwrap();
        let plans = work.path().join("plans");
        std::fs::create_dir_all(&plans).unwrap();
        Pipeline {
            first: work.path().join("runner-1"),
            second: work.path().join("runner-2"),
            world: work.path().join("world.json"),
            plans,
            remote,
            _work: work,
        }
    }

    /// A fresh clone of the repository: the stack and its input files.
    fn clone(&self, root: &Path, main: &str, files: &[(&str, &str)]) {
        let dir = root.join("stacks/gpu");
        std::fs::create_dir_all(&dir).unwrap();
        let main = main
            .replace("BACKEND", &self.remote.block)
            .replace("WORLD", &self.world.display().to_string());
        std::fs::write(dir.join("main.hcl"), main).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    fn plan(&self, args: &[&str]) {
        let mut all = vec!["plan", "stacks/gpu", "--out", "../plans/pr.bin"];
        all.extend_from_slice(args);
        let (code, out, err) = self.remote.run(&self.first, &all);
        assert_eq!(code, 0, "{out}{err}");
    }

    fn apply(&self, args: &[&str]) -> (i32, String, String) {
        let mut all = vec!["apply", "../plans/pr.bin"];
        all.extend_from_slice(args);
        self.remote.run(&self.second, &all)
    }

    fn world(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&self.world).unwrap_or("{}".into())).unwrap()
    }

    fn set_world(&self, value: serde_json::Value) {
        std::fs::write(&self.world, value.to_string()).unwrap();
    }
}

const CONTRACT_STACK: &str = r#"gpustack {
BACKEND
}

variable "replicas" {
  type    = number
  default = 4
}

provider "test" {
  world = "WORLD"
}

data "test_object" "source" {
  name = "source"
}

resource "test_object" "config" {
  name  = "config"
  value = "${file("${path.module}/config.yaml")}|${var.replicas}|${data.test_object.source.value}"
}
"#;

/// Between the plan and its apply, the input file, the data source's answer and a variable
/// in the environment change: apply makes exactly what was reviewed.
#[test]
fn a_saved_plan_applies_what_was_reviewed_when_its_inputs_changed_since() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "contract-same");
    let p = Pipeline::new(kubernetes_remote(&cluster, &namespace.name, "same"));
    p.set_world(serde_json::json!({"source": {"name": "source", "value": "from-source-v1"}}));
    p.clone(
        &p.first,
        CONTRACT_STACK,
        &[("config.yaml", "reviewed: yes")],
    );
    p.plan(&[]);
    std::fs::remove_dir_all(&p.first).unwrap();

    p.clone(
        &p.second,
        CONTRACT_STACK,
        &[("config.yaml", "changed: after review")],
    );
    p.set_world(serde_json::json!({"source": {"name": "source", "value": "from-source-v2"}}));
    let mut remote_env = p.remote.env.clone();
    remote_env.push(("GPUSTACK_VAR_replicas".into(), "9".into()));
    let runner = Remote {
        block: p.remote.block.clone(),
        env: remote_env,
    };
    let (code, out, err) = runner.run(&p.second, &["apply", "../plans/pr.bin"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        p.world()["config"]["value"],
        "reviewed: yes|4|from-source-v1",
        "the reviewed file, variable and data-source answer"
    );
}

/// A variable given on the command line for a saved plan is refused before anything is done.
#[test]
fn a_saved_plan_refuses_a_variable_set_for_it_and_changes_nothing() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "contract-var");
    let p = Pipeline::new(kubernetes_remote(&cluster, &namespace.name, "var"));
    p.set_world(serde_json::json!({"source": {"name": "source", "value": "v1"}}));
    p.clone(&p.first, CONTRACT_STACK, &[("config.yaml", "reviewed")]);
    p.plan(&[]);
    p.clone(&p.second, CONTRACT_STACK, &[("config.yaml", "reviewed")]);
    let (code, out, err) = p.apply(&["--var", "replicas=9"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("cannot be set when applying a saved plan"),
        "{err}"
    );
    assert!(p.world().get("config").is_none(), "nothing was created");
}

/// What a plan keeps only as a digest — a sensitive data-source answer, a file that holds a
/// secret — is read again at apply; when it changed, apply refuses at the place it is read and
/// changes nothing that depends on it.
#[test]
fn a_saved_plan_refuses_when_a_secret_it_holds_as_a_digest_changed() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "contract-digest");
    let p = Pipeline::new(kubernetes_remote(&cluster, &namespace.name, "digest"));
    let stack = r#"gpustack {
BACKEND
}

provider "test" {
  world = "WORLD"
}

data "test_object" "vault" {
  name = "vault"
}

resource "test_object" "uses_secret" {
  name   = "uses-secret"
  secret = data.test_object.vault.secret
}

resource "test_object" "independent" {
  name  = "independent"
  value = "still applied"
}
"#;
    p.set_world(serde_json::json!({"vault": {"name": "vault", "secret": "hunter2-original"}}));
    p.clone(&p.first, stack, &[]);
    p.plan(&[]);
    let saved = std::fs::read_to_string(p.plans.join("pr.bin")).unwrap();
    assert!(!saved.contains("hunter2-original"), "{saved}");
    p.clone(&p.second, stack, &[]);
    p.set_world(serde_json::json!({"vault": {"name": "vault", "secret": "hunter2-rotated"}}));
    let (code, out, err) = p.apply(&[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Data source changed since the plan"), "{err}");
    assert!(err.contains("main.hcl"), "located: {err}");
    assert!(!err.contains("hunter2"), "{err}");
    let world = p.world();
    assert!(world.get("uses-secret").is_none(), "{world}");
    assert_eq!(world["independent"]["value"], "still applied", "{world}");
}

/// A sensitive file read by `file()` is kept as a digest; the same file applies, a changed one
/// is refused.
#[test]
fn a_file_holding_a_secret_is_checked_at_apply_not_stored() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "contract-file");
    let p = Pipeline::new(kubernetes_remote(&cluster, &namespace.name, "file"));
    let stack = r#"gpustack {
BACKEND
}

provider "test" {
  world = "WORLD"
}

resource "test_object" "key" {
  name   = "key"
  secret = sensitive(file("${path.module}/key.pem"))
}
"#;
    p.clone(
        &p.first,
        stack,
        &[("key.pem", "-----PRIVATE hunter2 KEY-----")],
    );
    p.plan(&[]);
    let saved = std::fs::read_to_string(p.plans.join("pr.bin")).unwrap();
    assert!(!saved.contains("hunter2"), "{saved}");
    p.clone(
        &p.second,
        stack,
        &[("key.pem", "-----PRIVATE rotated KEY-----")],
    );
    let (code, out, err) = p.apply(&[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("key.pem"), "{err}");
    assert!(p.world().get("key").is_none());
    p.clone(
        &p.second,
        stack,
        &[("key.pem", "-----PRIVATE hunter2 KEY-----")],
    );
    let (code, out, err) = p.apply(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.world()["key"]["secret"], "-----PRIVATE hunter2 KEY-----");
}

/// Two workspaces of one stack on a remote backend: each state where Terraform's backend of
/// the kind keeps a workspace's, `terraform.workspace` different in each, a workspace whose
/// state records objects not deleted without -force, and deleting one removes its state.
fn workspaces_hold_separate_states(remote: &Remote, dir: &Path) -> Vec<String> {
    std::fs::write(
        dir.join("main.hcl"),
        format!(
            "gpustack {{\n{}\n}}\n\nprovider \"test\" {{\n  world = \"world.json\"\n}}\n\nresource \"test_object\" \"pool\" {{\n  name  = \"pool-${{terraform.workspace}}\"\n  value = terraform.workspace\n}}\n\noutput \"workspace\" {{\n  value = test_object.pool.value\n}}\n",
            remote.block
        ),
    )
    .unwrap();
    let ok = |args: &[&str]| {
        let (code, out, err) = remote.run(dir, args);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        out
    };
    ok(&["init"]);
    ok(&["apply", "-auto-approve"]);
    ok(&["workspace", "new", "staging"]);
    ok(&["apply", "-auto-approve"]);
    assert_eq!(ok(&["output", "-raw", "workspace"]), "staging");
    assert_eq!(
        ok(&["workspace", "list"]).trim_end(),
        "  default\n* staging"
    );
    ok(&["workspace", "select", "default"]);
    assert_eq!(ok(&["output", "-raw", "workspace"]), "default");
    let (code, _, err) = remote.run(dir, &["workspace", "delete", "staging"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not empty"), "{err}");
    let mut seen = Vec::new();
    let (code, out, err) = remote.run(dir, &["workspace", "select", "staging"]);
    assert_eq!(code, 0, "{out}{err}");
    seen.push(ok(&["workspace", "show"]).trim().to_owned());
    ok(&["destroy", "-auto-approve"]);
    ok(&["workspace", "select", "default"]);
    ok(&["workspace", "delete", "staging"]);
    assert_eq!(ok(&["workspace", "list"]).trim_end(), "* default");
    seen
}

#[test]
fn workspaces_on_s3_are_kept_under_the_env_prefix() {
    let moto = Moto::start(&format!("workspaces-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="workspaces")"#);
    let remote = s3_remote(&moto, "workspaces", "gpu/state.json");
    let dir = tempfile::tempdir().unwrap();
    // Where the staging state is while it exists: as Terraform's S3 backend keeps it.
    let keys = || {
        moto.boto3(
            r#"print("\n".join(o["Key"] for o in boto3.client("s3", **kw).list_objects_v2(Bucket="workspaces").get("Contents", [])))"#,
        )
    };
    let shown = workspaces_hold_separate_states(&remote, dir.path());
    assert_eq!(shown, ["staging"]);
    let after = keys();
    assert!(after.contains("gpu/state.json"), "{after}");
    assert!(
        !after.contains("env:/staging/gpu/state.json"),
        "deleted: {after}"
    );
    // And it is there when made: a second workspace, kept.
    let (code, out, err) = remote.run(dir.path(), &["workspace", "new", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(keys().contains("env:/prod/gpu/state.json"), "{}", keys());
}

#[test]
fn workspaces_on_kubernetes_are_kept_in_secrets_named_after_them() {
    let cluster = test_cluster();
    let namespace = Namespace::new(&cluster, "ws");
    let remote = kubernetes_remote(&cluster, &namespace.name, "gpu");
    let dir = tempfile::tempdir().unwrap();
    let shown = workspaces_hold_separate_states(&remote, dir.path());
    assert_eq!(shown, ["staging"]);
    let (code, out, err) = remote.run(dir.path(), &["workspace", "new", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let secrets = cluster.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert!(secrets.contains("gpustack-state-prod-gpu"), "{secrets}");
    assert!(secrets.contains("gpustack-state-gpu"), "{secrets}");
    assert!(
        !secrets.contains("gpustack-state-staging-gpu"),
        "deleted: {secrets}"
    );
}
