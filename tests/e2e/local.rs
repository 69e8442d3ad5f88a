//! `cdkd local` with a real CDK app (tests/fixtures/apps/local.js): the stack is deployed to the
//! emulator, then its Node.js and Python functions run on this machine from their asset folders
//! with `--from-state` (the queue URL from state, a message sent to the emulator's queue, the
//! layer's module found), `start-api` serves the LambdaRestApi and the HttpApi over real TCP
//! connections (path parameters, a POST body, stage variables, payload 1.0 and 2.0, a code
//! reload), and a Java function and `--container` without Docker are refused by name.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use cdkd_tests::{wait_for, workspace_root, AppWorld, Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "LocalStack";
const QUEUE: &str = "Queue4A7E3555";
const NODE_ASSET: &str = "asset.9927a1cc4d701f747f9b5918562de981641208ce14631ff6d1e4cee0770ddcb8";

/// PATH with the emulator venv's python (boto3, as Lambda's Python runtime has it) first, and
/// NODE_PATH with the AWS SDK v3 clients the emulator installs (Lambda's Node.js runtime has
/// them built in).
fn runtime_env() -> Vec<(&'static str, String)> {
    let root = workspace_root();
    vec![
        (
            "PATH",
            format!(
                "{}:{}",
                root.join(".venv/bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        (
            "NODE_PATH",
            root.join("tests/emulator/node/node_modules")
                .display()
                .to_string(),
        ),
        (
            "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED",
            "true".into(),
        ),
    ]
}

fn local(world: &AppWorld, args: &[&str], extra: &[(&str, &str)]) -> Run {
    let app = world.assembly.path().display().to_string();
    let mut all = vec!["local"];
    all.extend_from_slice(&args[..1]);
    all.extend_from_slice(&["-a", &app]);
    all.extend_from_slice(&args[1..]);
    let env = runtime_env();
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend_from_slice(extra);
    world.cdkd_with_env(&all, &vars)
}

fn event_file(dir: &std::path::Path, name: &str, event: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, event.to_string()).unwrap();
    path.display().to_string()
}

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

/// One HTTP/1.1 request over a fresh TCP connection: (status, headers text, body).
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: local-e2e\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

#[test]
fn functions_and_apis_run_locally_wired_to_the_deployed_stack() {
    let world = AppWorld::of("local", STACK, "local", |_| {});
    let deployed = world.deploy(&[STACK]);
    assert_eq!(
        deployed.code,
        Some(0),
        "{}\n{}",
        deployed.stdout,
        deployed.stderr
    );
    let resources = world.resources(STACK);
    let queue_url = resources[QUEUE]["physicalId"].as_str().unwrap().to_string();
    let queue_arn = resources[QUEUE]["attributes"]["Arn"].clone();
    let events = tempfile::tempdir().unwrap();

    // The Node.js function, its QUEUE_URL from state, its `greeting` module from the layer.
    let node_event = event_file(events.path(), "node.json", &json!({"name": "node-event"}));
    let node = local(
        &world,
        &[
            "invoke",
            "LocalStack/NodeFn",
            "--from-state",
            "--event",
            &node_event,
        ],
        &[],
    )
    .success();
    let result: Value = serde_json::from_str(node.stdout.trim())
        .unwrap_or_else(|err| panic!("{err}: {}\n{}", node.stdout, node.stderr));
    assert_eq!(result["greeting"], "hello, node-event, from the layer");
    assert_eq!(result["style"], "plain");
    assert!(result["messageId"].is_string(), "{result}");
    assert!(node.stderr.contains("START RequestId: "), "{}", node.stderr);
    assert!(
        node.stderr.contains("REPORT RequestId: "),
        "{}",
        node.stderr
    );
    assert!(
        node.stderr.contains("INFO\tnode handler called"),
        "{}",
        node.stderr
    );
    assert!(!node.stderr.contains("left empty"), "{}", node.stderr);

    // The Python function, from stdin, with QUEUE_ARN (Fn::GetAtt) from state.
    let mut python = world.command(&[
        "local",
        "invoke",
        "-a",
        &world.assembly.path().display().to_string(),
        "LocalStack/PyFn",
        "--from-state",
        "--event",
        "-",
    ]);
    for (key, value) in runtime_env() {
        python.env(key, value);
    }
    let mut child = python
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"name": "python-event"}"#)
        .unwrap();
    let python: Run = child.wait_with_output().unwrap().into();
    let python = python.success();
    let result: Value = serde_json::from_str(python.stdout.trim()).unwrap();
    assert_eq!(result["greeting"], "hello, python-event, from the layer");
    assert_eq!(result["queueArn"], queue_arn);
    assert!(
        python.stderr.contains("python handler called"),
        "{}",
        python.stderr
    );

    // Both messages reached the emulator's queue.
    let bodies = wait_for(
        "both messages in the queue",
        Duration::from_secs(20),
        || {
            let received = aws(&format!(
            "[m['Body'] for m in c('sqs').receive_message(QueueUrl='{queue_url}', MaxNumberOfMessages=10, VisibilityTimeout=0).get('Messages', [])]"
        ));
            let bodies: Vec<Value> = received
                .as_array()
                .unwrap()
                .iter()
                .map(|b| serde_json::from_str(b.as_str().unwrap()).unwrap())
                .collect();
            (bodies.len() >= 2).then_some(bodies)
        },
    );
    assert!(
        bodies.contains(&json!({"from": "node", "greeting": "hello, node-event, from the layer"})),
        "{bodies:?}"
    );
    assert!(
        bodies.contains(
            &json!({"from": "python", "greeting": "hello, python-event, from the layer"})
        ),
        "{bodies:?}"
    );

    // Without --from-state the queue URL is named and left empty; --env-override applies; the
    // function's own failure is its payload and exit code 1.
    let overrides = event_file(
        events.path(),
        "env.json",
        &json!({"Parameters": {"GREETING_STYLE": "fancy"}}),
    );
    let offline = local(
        &world,
        &[
            "invoke",
            "LocalStack/NodeFn",
            "--env-override",
            &overrides,
            "--event",
            &node_event,
        ],
        &[],
    );
    assert_eq!(
        offline.code,
        Some(1),
        "{}\n{}",
        offline.stdout,
        offline.stderr
    );
    assert!(
        offline.stderr.contains("QUEUE_URL is left empty")
            && offline.stderr.contains("--from-state"),
        "{}",
        offline.stderr
    );
    let failure: Value = serde_json::from_str(offline.stdout.trim()).unwrap();
    assert!(failure["errorType"].is_string(), "{failure}");

    // A runtime it cannot run is refused by name; so is --container without Docker.
    let java = local(&world, &["invoke", "LocalStack/JavaFn"], &[]);
    assert_eq!(java.code, Some(1));
    assert!(
        java.stderr.contains("LocalStack/JavaFn") && java.stderr.contains("java21"),
        "{}",
        java.stderr
    );
    let no_docker_dir = tempfile::tempdir().unwrap();
    let no_docker = no_docker_dir.path().display().to_string();
    let assembly = world.assembly.path().display().to_string();
    let invoke_in_container = |env: &[(&str, &str)]| {
        world.cdkd_with_env(
            &[
                "local",
                "invoke",
                "-a",
                &assembly,
                "LocalStack/NodeFn",
                "--container",
            ],
            env,
        )
    };
    let container = invoke_in_container(&[("PATH", &no_docker)]);
    assert_eq!(container.code, Some(1));
    assert!(
        container.stderr.contains("--container") && container.stderr.contains("no docker on PATH"),
        "{}",
        container.stderr
    );
    // With Docker, the variables (credentials among them) reach `docker run` through an env
    // file only this user can read: never on its command line, which `ps` shows to every user,
    // and never in docker's own environment, where a template's DOCKER_HOST would steer it.
    // A stand-in docker records its arguments, environment and env file, then refuses the run.
    let fake_dir = tempfile::tempdir().unwrap();
    let fake = fake_dir.path().join("docker");
    std::fs::write(
        &fake,
        "#!/bin/sh\ncase \"$1\" in\n  version) echo 27.0.0 ;;\n  run) printf '%s\\n' \"$@\" > \"$RECORD/args\"; env > \"$RECORD/env\"; prev=''; for a in \"$@\"; do if [ \"$prev\" = --env-file ]; then cp \"$a\" \"$RECORD/envfile\"; stat -c %a \"$a\" > \"$RECORD/mode\"; fi; prev=$a; done; echo 'refused by the test' >&2; exit 1 ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        fake_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let record = fake_dir.path().display().to_string();
    let secret = "container-test-secret-1f2e3d";
    let run = invoke_in_container(&[
        ("PATH", &path),
        ("RECORD", &record),
        ("AWS_SECRET_ACCESS_KEY", secret),
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("refused by the test"), "{}", run.stderr);
    let args = std::fs::read_to_string(fake_dir.path().join("args")).unwrap();
    assert!(
        !args.contains(secret),
        "a credential on docker's command line:\n{args}"
    );
    // The template's variables steer the container, never the docker CLI (the credential is
    // in docker's environment only because it is in the caller's, which docker inherits).
    let env = std::fs::read_to_string(fake_dir.path().join("env")).unwrap();
    assert!(
        !env.lines().any(|line| line.starts_with("GREETING_STYLE=")),
        "a template variable in docker's own environment"
    );
    let env_file = std::fs::read_to_string(fake_dir.path().join("envfile")).unwrap();
    for expected in [
        format!("AWS_SECRET_ACCESS_KEY={secret}"),
        "GREETING_STYLE=plain".to_string(),
    ] {
        assert!(
            env_file.lines().any(|line| line == expected),
            "the env file lacks {expected}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fake_dir.path().join("mode"))
            .unwrap()
            .trim(),
        "600"
    );

    // start-api: both APIs on ports of their own.
    let mut serve = world.command(&[
        "local",
        "start-api",
        "-a",
        &world.assembly.path().display().to_string(),
        STACK,
        "--port",
        "0",
        "--from-state",
    ]);
    for (key, value) in runtime_env() {
        serve.env(key, value);
    }
    let mut server = serve
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut listing = Vec::new();
    let (mut rest_port, mut http_port) = (None, None);
    while rest_port.is_none() || http_port.is_none() {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("start-api ended early: {listing:?}"))
            .unwrap();
        let port = || {
            line.split("http://127.0.0.1:").nth(1).map(|rest| {
                rest.split(['/', ' '])
                    .next()
                    .unwrap()
                    .parse::<u16>()
                    .unwrap()
            })
        };
        if line.starts_with("LocalStack/RestApi (REST API, stage prod)") {
            rest_port = port();
        } else if line.starts_with("LocalStack/HttpApi (HTTP API, stage $default)") {
            http_port = port();
        }
        listing.push(line);
    }
    let (rest_port, http_port) = (rest_port.unwrap(), http_port.unwrap());

    // HTTP API, payload 2.0: GET with a path parameter, to the Python function.
    let (status, head, body) = http(http_port, "GET", "/items/42?x=1", "");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.to_lowercase().contains("x-runtime: python"), "{head}");
    let got: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(got["version"], "2.0");
    assert_eq!(got["routeKey"], "GET /items/{id}");
    assert_eq!(got["rawPath"], "/items/42");
    assert_eq!(got["pathParameters"], json!({"id": "42"}));
    assert_eq!(got["greeting"], "hello, api, from the layer");

    // HTTP API, payload 1.0 (the integration says so): POST with a body, to the Node.js one.
    let (status, _, body) = http(http_port, "POST", "/items", r#"{"item":"book"}"#);
    assert_eq!(status, 200, "{body}");
    let posted: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(posted["version"], "1.0");
    assert_eq!(posted["method"], "POST");
    assert_eq!(posted["resource"], "/items");
    assert_eq!(posted["body"], r#"{"item":"book"}"#);
    let (status, _, body) = http(http_port, "GET", "/nothing/here", "");
    assert_eq!((status, body.as_str()), (404, r#"{"message":"Not Found"}"#));

    // REST API, payload 1.0, under its stage: the proxy resource, a POST body, stage variables.
    let (status, _, body) = http(rest_port, "POST", "/prod/orders/7", "order seven");
    assert_eq!(status, 200, "{body}");
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rest["method"], "POST");
    assert_eq!(rest["path"], "/orders/7");
    assert_eq!(rest["resource"], "/{proxy+}");
    assert_eq!(rest["pathParameters"], json!({"proxy": "orders/7"}));
    assert_eq!(rest["stageVariables"], json!({"color": "blue"}));
    assert_eq!(rest["body"], "order seven");
    assert_eq!(rest["version"], Value::Null);
    let (status, _, body) = http(rest_port, "GET", "/prod", "");
    assert_eq!(status, 200, "{body}");
    let root: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(root["resource"], "/");
    let (status, _, _) = http(rest_port, "GET", "/orders/7", "");
    assert_eq!(status, 403, "a path outside the stage is API Gateway's 403");

    // The function's code folder changes: the next request runs the new code.
    let handler = world.assembly.path().join(NODE_ASSET).join("index.js");
    let code = std::fs::read_to_string(&handler).unwrap();
    std::fs::write(
        &handler,
        code.replace("runtime: 'node'", "runtime: 'node-edited'"),
    )
    .unwrap();
    let (status, _, body) = http(rest_port, "GET", "/prod/again", "");
    assert_eq!(status, 200, "{body}");
    let edited: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(edited["runtime"], "node-edited");

    // Hostile input: answered with a status, never a crash or unbounded memory, and the
    // server answers the next request.
    for (request, status) in [
        // Another name for this machine: a web page reaching it through DNS rebinding.
        (
            "GET /prod/x HTTP/1.1\r\nHost: attacker.example:8080\r\n\r\n".to_string(),
            403,
        ),
        ("GET /prod/x HTTP/1.1\r\n\r\n".to_string(), 403),
        // A request line longer than the 64 KiB head.
        (format!("GET /{} HTTP/1.1\r\n", "a".repeat(70 * 1024)), 414),
        // A header block that never ends within the limit.
        (
            format!(
                "GET /prod/x HTTP/1.1\r\nHost: 127.0.0.1\r\n{}",
                "X-Filler: yes\r\n".repeat(5000)
            ),
            431,
        ),
        // A chunk size that overflows when added to the body read so far.
        (
            "POST /prod/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nffffffffffffffff\r\n".to_string(),
            413,
        ),
        (
            "POST /prod/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\n\r\n".to_string(),
            413,
        ),
    ] {
        let mut stream = TcpStream::connect(("127.0.0.1", rest_port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = stream.write_all(request.as_bytes());
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let got: u16 = answer
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_default();
        assert_eq!(got, status, "{:.80}…\n{answer}", request);
    }
    let (status, _, body) = http(rest_port, "GET", "/prod/after", "");
    assert_eq!(status, 200, "{body}");
    assert!(server.try_wait().unwrap().is_none(), "start-api exited");

    server.kill().unwrap();
    let mut stderr = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let _ = server.wait();
    assert!(stderr.contains("Reloaded LocalStack/NodeFn"), "{stderr}");
    assert!(
        stderr.contains("GET /items/42?x=1 -> LocalStack/PyFn (200)"),
        "{stderr}"
    );
}
