//! Figures for the plugin boundary: load and init time, FFI round trip, `.so` size, and the
//! `cdkd` binary's start-up. Run through `tests/bench.sh` (release build); prints a table.
//!
//! Usage: plugin-bench <plugin.so> <cdkd binary> [round trips]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use abi_stable::std_types::{RResult, RStr, RString};
use cdkd_provider_api::abi::{FfiResult, HostContext, LogLevel};
use cdkd_provider_api::host;
use cdkd_provider_api::protocol::{CreateRequest, HostConfig};

extern "C" fn quiet_log(_: u8, _: RStr<'_>, _: RStr<'_>, _: RStr<'_>) {}

extern "C" fn no_host_call(name: RStr<'_>, _: RStr<'_>) -> FfiResult {
    RResult::RErr(cdkd_provider_api::ProviderError::unsupported(name.as_str()))
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn main() {
    let mut args = std::env::args().skip(1);
    let plugin = PathBuf::from(
        args.next()
            .expect("usage: plugin-bench <plugin.so> <cdkd> [n]"),
    );
    let cdkd = PathBuf::from(
        args.next()
            .expect("usage: plugin-bench <plugin.so> <cdkd> [n]"),
    );
    let round_trips: usize = args.next().map_or(20_000, |n| n.parse().expect("a count"));

    let pin = host::sha256_file(&plugin).expect("the plugin is readable");
    // The load as the host does it: the library hashed against its pin, then opened.
    let started = Instant::now();
    let library = host::load(&plugin, &pin).expect("the plugin loads");
    let load = started.elapsed();
    // Plugins are never unloaded; a 'static library lets calls be spawned on the runtime.
    let library: &'static host::PluginLibrary = Box::leak(Box::new(library));

    let config = HostConfig {
        plugin_name: "bench".into(),
        region: "us-east-1".into(),
        worker_threads: 2,
        state_bucket: None,
        resource_timeout_secs: None,
        ..HostConfig::default()
    };
    let started = Instant::now();
    library
        .init(HostContext {
            config: RString::from(serde_json::to_string(&config).unwrap()),
            max_log_level: LogLevel::Error as u8,
            log: quiet_log,
            host_call: no_host_call,
        })
        .expect("init");
    let init = started.elapsed();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let request = CreateRequest {
        logical_id: "Bench".into(),
        ..CreateRequest::default()
    };
    let (sequential, concurrent) = runtime.block_on(async {
        for _ in 0..1_000 {
            library.create("Acme::Echo::Fault", &request).await.unwrap();
        }
        let started = Instant::now();
        for _ in 0..round_trips {
            library.create("Acme::Echo::Fault", &request).await.unwrap();
        }
        let sequential = started.elapsed() / round_trips as u32;
        let started = Instant::now();
        let calls: Vec<_> = (0..round_trips)
            .map(|_| {
                let request = request.clone();
                tokio::spawn(async move { library.create("Acme::Echo::Fault", &request).await })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        (sequential, started.elapsed() / round_trips as u32)
    });

    let runs = 20;
    let mut startup = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(&cdkd)
            .args(["providers", "list", "--json"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("cdkd runs");
        assert!(status.success());
        startup.push(started.elapsed());
    }
    startup.sort();

    let size = std::fs::metadata(&plugin).map(|m| m.len()).unwrap_or(0);
    println!("plugin                          {}", plugin.display());
    println!(
        "plugin .so size                 {:.1} MB",
        size as f64 / 1e6
    );
    println!("load (dlopen + layout check)    {:.0} µs", micros(load));
    println!("init (runtime start)            {:.0} µs", micros(init));
    println!(
        "FFI round trip, sequential      {:.1} µs/call ({round_trips} calls)",
        micros(sequential)
    );
    println!(
        "FFI round trip, all in flight   {:.1} µs/call",
        micros(concurrent)
    );
    println!(
        "cdkd providers list --json      median {:.1} ms, min {:.1} ms ({runs} runs)",
        startup[runs / 2].as_secs_f64() * 1e3,
        startup[0].as_secs_f64() * 1e3
    );
}
