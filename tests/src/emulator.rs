//! A private emulator per test process: started on first use, gone when the process exits.
//!
//! Each test binary gets its own moto (on a free 127.0.0.1 port), so binaries never see each
//! other's buckets or fault rules. Tests inside one binary share it and use unique names.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::workspace_root;

/// A running emulator.
pub struct Emulator {
    endpoint: String,
    _process: Option<Mutex<Child>>,
}

/// Set for a child test process so it uses its parent's emulator instead of starting one.
pub const ATTACH_ENV: &str = "CDKD_TEST_EMULATOR_ENDPOINT";

static SHARED: OnceLock<Emulator> = OnceLock::new();
static UNIQUE: AtomicUsize = AtomicUsize::new(0);

impl Emulator {
    /// This process's emulator, started (and its venv installed) on first use.
    pub fn shared() -> &'static Emulator {
        SHARED.get_or_init(Emulator::start)
    }

    fn start() -> Emulator {
        if let Ok(endpoint) = std::env::var(ATTACH_ENV) {
            return Emulator {
                endpoint,
                _process: None,
            };
        }
        let root = workspace_root();
        let setup = Command::new("bash")
            .arg(root.join("tests/emulator/setup.sh"))
            .status()
            .expect("bash runs");
        assert!(setup.success(), "tests/emulator/setup.sh failed");
        let dir = tempfile::tempdir().expect("temp dir").keep();
        let endpoint_file: PathBuf = dir.join("endpoint");
        let log = std::fs::File::create(dir.join("emulator.log")).expect("log file");
        let process = Command::new(root.join(".venv/bin/python"))
            .arg(root.join("tests/emulator/server.py"))
            .args(["--port", "0", "--exit-with-parent", "--endpoint-file"])
            .arg(&endpoint_file)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the emulator starts");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !endpoint_file.exists() {
            assert!(
                Instant::now() < deadline,
                "the emulator did not start; see {}",
                dir.join("emulator.log").display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let endpoint = std::fs::read_to_string(&endpoint_file)
            .unwrap()
            .trim()
            .to_string();
        let emulator = Emulator {
            endpoint,
            _process: Some(Mutex::new(process)),
        };
        emulator.post(
            "/moto-api/config",
            &serde_json::json!({"lambda": {"use_docker": false}}),
        );
        emulator
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// POSTs JSON to a control path (`/_emulator/faults`, `/moto-api/reset`, ...).
    pub fn post(&self, path: &str, body: &Value) -> Value {
        http("POST", &format!("{}{path}", self.endpoint), Some(body))
    }

    /// GETs a control path.
    pub fn get(&self, path: &str) -> Value {
        http("GET", &format!("{}{path}", self.endpoint), None)
    }

    /// Replaces the emulator's targeted fault rules (`[]` clears them).
    pub fn faults(&self, rules: Value) {
        self.post("/_emulator/faults", &serde_json::json!({ "rules": rules }));
    }

    /// How often each targeted fault rule has answered, in rule order.
    pub fn fault_hits(&self) -> Vec<u64> {
        self.get("/_emulator/faults")["rules"]
            .as_array()
            .map(|rules| rules.iter().filter_map(|r| r["hits"].as_u64()).collect())
            .unwrap_or_default()
    }

    /// Waits until the emulator has answered everything sent to it (it adds latency before it
    /// answers, and a loaded machine answers slowly): what a killed process had in flight has
    /// then landed, as it would have by the time a person runs force-unlock.
    pub fn settle(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.get("/_emulator/inflight")["inFlight"] != serde_json::json!(0) {
            assert!(
                std::time::Instant::now() < deadline,
                "the emulator is still answering"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// DELETEs a control path (`/_emulator/stats` clears the counts).
    pub fn delete(&self, path: &str) -> Value {
        http("DELETE", &format!("{}{path}", self.endpoint), None)
    }

    /// The calls (`service:Operation`) whose names start with `prefix` (`elasticloadbalancing:`,
    /// `wafv2:`) since the stats were last cleared (`delete("/_emulator/stats")`): what a
    /// no-change deploy must not have sent.
    pub fn calls(&self, prefix: &str) -> Vec<String> {
        self.get("/_emulator/stats")
            .as_object()
            .expect("the emulator's stats are an object")
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Environment variables that point cdkd (and the AWS SDK) at this emulator.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("CDKD_S3_FORCE_PATH_STYLE", "true".into()),
            // Not on a terminal: a deploy that adds a role would be refused for want of
            // approval. The approval tests ask for their level with --require-approval.
            ("CDKD_REQUIRE_APPROVAL", "never".into()),
            // No user plugins file of whoever runs the tests is layered over the bundled one.
            (
                "XDG_CONFIG_HOME",
                crate::target_dir()
                    .join("test-config")
                    .display()
                    .to_string(),
            ),
            // Registry schemas are cached per test process, inside the checkout.
            (
                "CDKD_CACHE_DIR",
                crate::target_dir()
                    .join("test-cache")
                    .join(std::process::id().to_string())
                    .display()
                    .to_string(),
            ),
        ]
    }

    /// The AWS environment the host library would resolve against this emulator.
    /// Given through configuration, not the process environment (which threaded tests share).
    pub async fn aws(&self) -> cdkd::aws_env::AwsEnvironment {
        cdkd::aws_env::AwsEnvironment::load(&cdkd::aws_env::AwsOptions {
            region: Some("us-east-1".into()),
            s3_force_path_style: true,
            endpoint_url: Some(self.endpoint.clone()),
            static_credentials: Some(cdkd::aws_env::StaticCredentials {
                access_key_id: "testing".into(),
                secret_access_key: "testing".into(),
            }),
            cache_dir: Some(
                crate::target_dir()
                    .join("test-cache")
                    .join(std::process::id().to_string()),
            ),
            ..Default::default()
        })
        .await
    }

    /// Evaluates a Python expression against the emulator's service APIs and returns its JSON
    /// value. `c("sqs")` is a boto3 client; e.g. `c("sqs").list_queues().get("QueueUrls", [])`.
    pub fn boto(&self, expression: &str) -> Value {
        let script = format!(
            "import boto3, json, sys\n\
             def c(service):\n    return boto3.client(service, endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n\
             print(json.dumps({expression}, default=str))\n",
            endpoint = self.endpoint
        );
        let output = std::process::Command::new(workspace_root().join(".venv/bin/python"))
            .args(["-c", &script])
            .output()
            .expect("the venv's python runs");
        assert!(
            output.status.success(),
            "boto3 check failed: {}\n{}",
            expression,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("JSON from the boto3 check")
    }

    /// A name no other test in this process uses (lowercase, bucket-safe).
    pub fn unique(prefix: &str) -> String {
        format!(
            "{prefix}-{}-{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::SeqCst)
        )
    }
}

/// A tiny HTTP/1.1 client for the emulator's control endpoints (no dependency needed).
fn http(method: &str, url: &str, body: Option<&Value>) -> Value {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).expect("connect to the emulator");
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}
