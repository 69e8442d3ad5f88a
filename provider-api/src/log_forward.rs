//! Forwards a plugin's `tracing` events to the host's log callback.
//!
//! Each plugin `.so` links its own copy of `tracing`, with its own global dispatcher, so events
//! emitted inside a plugin never reach the host's subscriber on their own. This layer renders
//! each event to one line and hands it over; the host re-emits it under target `cdkd::plugin`.

use std::fmt::Write as _;

use abi_stable::std_types::RStr;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

use crate::abi::LogLevel;

type HostLog = extern "C" fn(u8, RStr<'_>, RStr<'_>, RStr<'_>);

struct ForwardLayer {
    host_log: HostLog,
    max_level: LogLevel,
    plugin: String,
}

fn to_log_level(level: &Level) -> LogLevel {
    match *level {
        Level::ERROR => LogLevel::Error,
        Level::WARN => LogLevel::Warn,
        Level::INFO => LogLevel::Info,
        Level::DEBUG => LogLevel::Debug,
        Level::TRACE => LogLevel::Trace,
    }
}

#[derive(Default)]
struct LineVisitor {
    message: String,
    fields: String,
}

impl Visit for LineVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for ForwardLayer {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        to_log_level(metadata.level()) <= self.max_level
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut line = LineVisitor::default();
        event.record(&mut line);
        line.message.push_str(&line.fields);
        (self.host_log)(
            to_log_level(event.metadata().level()) as u8,
            RStr::from(self.plugin.as_str()),
            RStr::from(event.metadata().target()),
            RStr::from(line.message.as_str()),
        );
    }
}

/// Makes the forwarder this plugin's global subscriber (once; later calls are ignored).
pub(crate) fn install(host_log: HostLog, max_level: LogLevel, plugin: &str) {
    let subscriber = tracing_subscriber::registry().with(ForwardLayer {
        host_log,
        max_level,
        plugin: plugin.to_string(),
    });
    let _ = tracing::subscriber::set_global_default(subscriber);
    // The default hook prints to stderr past the host's log formatting. The host already reports
    // a caught panic as an error, so the hook only adds the location, at debug level.
    let plugin = plugin.to_string();
    std::panic::set_hook(Box::new(move |info| {
        let message = format!("panic: {info}");
        host_log(
            LogLevel::Debug as u8,
            RStr::from(plugin.as_str()),
            RStr::from("panic"),
            RStr::from(message.as_str()),
        );
    }));
}
