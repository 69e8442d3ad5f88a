//! The plugin boundary in one long-lived host process: the example plugin loaded through
//! provider-api's loader, as the host loads it, with test doubles for the host callbacks.
//! These are the behaviours a short CLI run cannot show: the process survives a panic and
//! keeps calling, a dropped call stops the plugin's task, and callbacks reach the host.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use abi_stable::std_types::{RResult, RStr, RString};
use cdkd_provider_api::abi::{FfiResult, HostContext, LogLevel};
use cdkd_provider_api::host::{self, PluginLibrary};
use cdkd_provider_api::protocol::{CreateRequest, HostConfig};
use cdkd_provider_api::ErrorKind;
use cdkd_tests::{plugin_library, wait_for};
use serde_json::{json, Map, Value};

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
static CREDENTIAL_CALLS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn test_log(level: u8, plugin: RStr<'_>, target: RStr<'_>, message: RStr<'_>) {
    LOG.lock().unwrap().push(format!(
        "{:?} {plugin} {target} {message}",
        LogLevel::from_u8(level)
    ));
}

extern "C" fn test_host_call(name: RStr<'_>, _payload: RStr<'_>) -> FfiResult {
    match name.as_str() {
        "credentials" => {
            CREDENTIAL_CALLS.fetch_add(1, Ordering::SeqCst);
            RResult::ROk(RString::from(
                json!({"accessKeyId": "FROM-CALLBACK", "secretAccessKey": "s"}).to_string(),
            ))
        }
        other => RResult::RErr(cdkd_provider_api::ProviderError::unsupported(other)),
    }
}

/// The test plugin, loaded and initialised once for this process, without credentials so
/// that the plugin must ask the host for them.
fn plugin() -> &'static PluginLibrary {
    static PLUGIN: OnceLock<PluginLibrary> = OnceLock::new();
    PLUGIN.get_or_init(|| {
        let path = plugin_library("cdkd_test_faults");
        let pin = host::sha256_file(&path).expect("readable");
        let library = host::load(&path, &pin).expect("loads");
        let config = HostConfig {
            plugin_name: "echo-under-test".into(),
            region: "us-west-2".into(),
            worker_threads: 1,
            state_bucket: None,
            resource_timeout_secs: None,
            ..HostConfig::default()
        };
        library
            .init(HostContext {
                config: RString::from(serde_json::to_string(&config).unwrap()),
                max_log_level: LogLevel::Info as u8,
                log: test_log,
                host_call: test_host_call,
            })
            .expect("init");
        library
    })
}

fn fault(properties: Value) -> CreateRequest {
    CreateRequest {
        logical_id: "Fault1".into(),
        stack_name: "Test".into(),
        properties: serde_json::from_value::<Map<String, Value>>(properties).unwrap(),
        client_token: String::new(),
    }
}

#[tokio::test]
async fn the_host_keeps_calling_after_a_plugin_panic() {
    let plugin = plugin();
    for round in 0..3 {
        let err = plugin
            .create(
                "Acme::Echo::Fault",
                &fault(json!({"Panic": format!("round {round}")})),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::PANIC);
        assert!(err.message.contains(&format!("round {round}")), "{err}");
        let ok = plugin
            .create("Acme::Echo::Fault", &fault(json!({})))
            .await
            .unwrap();
        assert_eq!(ok.physical_id, "fault-Fault1");
    }
}

#[tokio::test]
async fn dropping_a_call_aborts_the_plugin_task() {
    let plugin = plugin();
    let dir = tempfile::tempdir().unwrap();
    let cancelled = dir.path().join("cancelled");
    let finished = dir.path().join("finished");

    let request = fault(json!({"SleepMs": 400, "TouchFile": cancelled}));
    let call = plugin.create("Acme::Echo::Fault", &request);
    assert!(tokio::time::timeout(Duration::from_millis(50), call)
        .await
        .is_err());
    // The control: the same call, awaited, does write its file.
    plugin
        .create(
            "Acme::Echo::Fault",
            &fault(json!({"SleepMs": 400, "TouchFile": finished})),
        )
        .await
        .unwrap();
    assert!(finished.exists(), "the awaited call did not run");
    // The dropped call's task is aborted inside the plugin: its witness says when.
    let dropped = dir.path().join("cancelled.dropped");
    wait_for(
        "the dropped call to be aborted",
        Duration::from_secs(10),
        || dropped.exists().then_some(()),
    );
    assert!(
        !cancelled.exists(),
        "the dropped call kept running in the plugin"
    );
}

#[tokio::test]
async fn the_plugin_asks_the_host_for_credentials_and_logs_through_it() {
    let plugin = plugin();
    let answer: Value = plugin
        .invoke("host_context", "Acme::Echo::Fault", &json!({}))
        .await
        .unwrap();
    assert_eq!(answer["accessKeyId"], "FROM-CALLBACK");
    assert_eq!(answer["region"], "us-west-2");
    assert!(CREDENTIAL_CALLS.load(Ordering::SeqCst) >= 1);

    let created = plugin
        .create(
            "Acme::Echo::Fault",
            &CreateRequest {
                logical_id: "Logged".into(),
                ..fault(json!({}))
            },
        )
        .await
        .unwrap();
    assert_eq!(created.physical_id, "fault-Logged");
    let log = LOG.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|line| line.starts_with("Info echo-under-test")
                && line.contains("created fault-Logged")),
        "{log:#?}"
    );
}

#[tokio::test]
async fn unknown_types_and_operations_are_unsupported_errors() {
    let plugin = plugin();
    let err = plugin
        .create("Acme::Nope::Thing", &fault(json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::UNSUPPORTED);
    let err = plugin
        .invoke::<Value, Value>("time_travel", "Acme::Echo::Fault", &json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::UNSUPPORTED);
    assert!(err.message.contains("time_travel"), "{err}");
}
