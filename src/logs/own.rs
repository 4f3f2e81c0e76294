//! ctrlinit's own log: a tracing layer that hands each event to the log thread, which writes it
//! to `<log_dir>/ctrlinit.log` and the console. Sending never blocks the caller.

use std::fmt::Write;

use tokio::sync::mpsc::UnboundedSender;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::command::Command;

/// Forwards tracing events to the log thread.
pub struct OwnLogLayer {
    tx: UnboundedSender<Command>,
}

impl OwnLogLayer {
    /// A layer sending to the log thread.
    pub fn new(tx: UnboundedSender<Command>) -> Self {
        OwnLogLayer { tx }
    }
}

/// Collects an event's message and other fields into one line.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for OwnLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut msg = Message(String::new());
        event.record(&mut msg);
        let level = *event.metadata().level();
        if self
            .tx
            .send(Command::Own {
                level,
                message: msg.0.clone(),
                at: std::time::SystemTime::now(),
            })
            .is_err()
        {
            // The log thread is gone (at exit): stderr is all that is left.
            eprintln!("ctrlinit: {level} {}", msg.0);
        }
    }
}
