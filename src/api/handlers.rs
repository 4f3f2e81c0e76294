//! One handler per request. Each asks the owner loop (or the log thread), waits where the
//! command waits, and writes its answer; none parses or decides anything the supervisor owns.

use std::io;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use super::goals::{Outcome, Unmet, await_goals, states_text};
use super::handles::{Handles, closed};
use super::protocol;
use crate::logs::Command as LogCommand;
use crate::model::protocol::{Condition, ErrorKind, Request, Response};
use crate::supervisor::control::{ChangeKind, Control, Detail, Goal, Refusal};
use crate::supervisor::events::Received;

/// Where a connection's answers go.
pub(crate) type Writer = tokio::net::unix::OwnedWriteHalf;

/// Writes one answer line.
pub(crate) async fn send(w: &mut Writer, r: Response) -> io::Result<()> {
    w.write_all(&protocol::encode(r)).await
}

fn refused(r: Refusal) -> Response {
    Response::error(r.kind, r.message)
}

/// The answer to a wait cut short by the init's exit.
fn exiting() -> Response {
    Response::error(ErrorKind::Failed, "ctrlinit is exiting")
}

/// Serves one request.
pub(crate) async fn handle(request: Request, h: &Handles, w: &mut Writer) -> io::Result<()> {
    match request {
        Request::Status { names, usage } => status(h, w, names, usage).await,
        Request::Wait {
            conditions,
            timeout_ms,
        } => wait(h, w, conditions, Duration::from_millis(timeout_ms)).await,
        Request::Start {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Start, names, all, timeout_ms).await,
        Request::Stop {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Stop, names, all, timeout_ms).await,
        Request::Restart {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Restart, names, all, timeout_ms).await,
        Request::Signal { signal, names } => signal_programs(h, w, signal, names).await,
        Request::Health { live: true, .. } => {
            // The same answer as /livez.
            let p = h.ask(|reply| Control::Probe { reply }).await?;
            let (healthy, problems) = (p.live, p.not_live);
            send(w, Response::Health { healthy, problems }).await
        }
        Request::Health { strict, .. } => {
            let (healthy, problems) = h.ask(|reply| Control::Health { strict, reply }).await?;
            send(w, Response::Health { healthy, problems }).await
        }
        Request::Reload => {
            let r = match h.ask(|reply| Control::Reload { reply }).await? {
                Ok(message) => Response::Done { message },
                Err(r) => refused(r),
            };
            send(w, r).await
        }
        Request::Shutdown => {
            let message = h.ask(|reply| Control::Shutdown { reply }).await?;
            send(w, Response::Done { message }).await
        }
        Request::Graph => {
            let programs = h.ask(|reply| Control::Graph { reply }).await?;
            send(w, Response::Graph { programs }).await
        }
        Request::Events => events(h, w).await,
        Request::Logs {
            names,
            lines,
            follow,
            by_program,
        } => logs(h, w, names, lines, follow, by_program).await,
    }
}

async fn status(h: &Handles, w: &mut Writer, names: Vec<String>, usage: bool) -> io::Result<()> {
    // Externals are listed with every program, not under a program's name.
    let all = names.is_empty();
    let detail = if usage {
        Detail::Usage
    } else {
        Detail::Processes
    };
    let r = match h
        .ask(|reply| Control::Snapshot {
            names,
            detail,
            externals: all,
            reply,
        })
        .await?
    {
        Ok(s) => Response::Status {
            seq: s.seq,
            programs: s.programs,
            network: s.network,
            previous_boot: crate::logs::ledger::previous_boot().cloned(),
            externals: s.externals,
        },
        Err(r) => refused(r),
    };
    send(w, r).await
}

/// `status --wait`: every condition at once.
async fn wait(
    h: &Handles,
    w: &mut Writer,
    conditions: Vec<Condition>,
    timeout: Duration,
) -> io::Result<()> {
    let events = h.events.subscribe();
    // Unknown names are an error at once; an instanced program's name is a condition on each
    // of its instances.
    let mut goals: Vec<Goal> = Vec::new();
    for c in conditions {
        let names = vec![c.name];
        let programs = match h
            .ask(|reply| Control::Status {
                names,
                detail: Detail::States,
                reply,
            })
            .await?
        {
            Ok((_, programs)) => programs,
            Err(r) => return send(w, refused(r)).await,
        };
        goals.extend(programs.into_iter().map(|p| Goal {
            name: p.name,
            states: c.states.clone(),
            fails: vec![],
            after_run: None,
        }));
    }
    let r = match await_goals(h, &goals, timeout, events).await? {
        Outcome::Held => Response::Done {
            message: "condition holds".into(),
        },
        Outcome::Failed(error) => Response::error(ErrorKind::Failed, error),
        Outcome::TimedOut(unmet) => {
            let unmet: Vec<String> = unmet
                .iter()
                .map(|u| format!("{} is {}", u.name, u.state))
                .collect();
            let error = format!("timed out after {timeout:?}: {}", unmet.join(", "));
            Response::error(ErrorKind::Timeout, error)
        }
        Outcome::Closing => exiting(),
    };
    send(w, r).await
}

/// `start`, `stop`, `restart`: the change, then its goals.
async fn change(
    h: &Handles,
    w: &mut Writer,
    kind: ChangeKind,
    names: Vec<String>,
    all: bool,
    timeout_ms: u64,
) -> io::Result<()> {
    let events = h.events.subscribe();
    let plan = match h
        .ask(|reply| Control::Change {
            kind,
            names,
            all,
            reply,
        })
        .await?
    {
        Ok(plan) => plan,
        Err(r) => return send(w, refused(r)).await,
    };
    let timeout = Duration::from_millis(timeout_ms);
    let r = match await_goals(h, &plan.goals, timeout, events).await? {
        Outcome::Held => Response::Done {
            message: plan.message,
        },
        Outcome::Failed(error) => Response::error(ErrorKind::Failed, error),
        Outcome::TimedOut(unmet) => {
            let pending: Vec<String> = unmet.iter().map(pending_text).collect();
            let error = format!(
                "timed out after {timeout:?} waiting for {}",
                pending.join(", ")
            );
            Response::error(ErrorKind::Timeout, error)
        }
        Outcome::Closing => exiting(),
    };
    send(w, r).await
}

/// `api to be running (it is starting)`.
fn pending_text(u: &Unmet) -> String {
    format!(
        "{} to be {} (it is {})",
        u.name,
        states_text(&u.states),
        u.state
    )
}

async fn signal_programs(
    h: &Handles,
    w: &mut Writer,
    signal: String,
    names: Vec<String>,
) -> io::Result<()> {
    let r = match h
        .ask(|reply| Control::Signal {
            signal,
            names,
            reply,
        })
        .await?
    {
        Ok(message) => Response::Done { message },
        Err(r) => refused(r),
    };
    send(w, r).await
}

/// `events`: every state change until the client or the init goes.
async fn events(h: &Handles, w: &mut Writer) -> io::Result<()> {
    let mut events = h.events.subscribe();
    let mut closing = h.closing.clone();
    loop {
        let received = tokio::select! {
            // First: at exit, every event sent before it still goes out.
            biased;
            r = events.recv() => r,
            _ = closed(&mut closing) => {
                while let Some(Received::Event(event)) = events.try_recv() {
                    send(w, Response::Event { event: (*event).clone() }).await?;
                }
                return Ok(());
            }
        };
        match received {
            Received::Event(event) => {
                send(
                    w,
                    Response::Event {
                        event: (*event).clone(),
                    },
                )
                .await?
            }
            Received::Missed(n) => {
                let error = format!("{n} events were missed (this client read too slowly)");
                send(w, Response::error(ErrorKind::Failed, error)).await?;
            }
            Received::Closed => return Ok(()),
        }
    }
}

/// `logs`: the last lines from the rings, then (with `follow`) live output.
async fn logs(
    h: &Handles,
    w: &mut Writer,
    names: Vec<String>,
    lines: usize,
    follow: bool,
    by_program: bool,
) -> io::Result<()> {
    let check = names.clone();
    let names = match h
        .ask(|reply| Control::Status {
            names: check,
            detail: Detail::States,
            reply,
        })
        .await?
    {
        // The programs the names stand for (an instanced program's name: its instances).
        Ok((_, programs)) if !names.is_empty() => programs.into_iter().map(|p| p.name).collect(),
        Ok(_) => names,
        Err(r) => return send(w, refused(r)).await,
    };
    let (tx, rx) = oneshot::channel();
    // The follower is registered with the tail, in one turn of the log thread: no line falls
    // between the last one the tail shows and the first one followed.
    let (follow_tx, mut follow_rx) = mpsc::channel(256);
    let _ = h.logs.send(LogCommand::Tail {
        programs: names,
        lines,
        by_program,
        reply: tx,
        follow: follow.then_some(follow_tx),
    });
    let text = rx.await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).into_owned();
    send(w, Response::Logs { text }).await?;
    if !follow {
        return Ok(());
    }
    let rx = &mut follow_rx;
    let mut closing = h.closing.clone();
    loop {
        let chunk = tokio::select! {
            biased;
            c = rx.recv() => c,
            _ = closed(&mut closing) => None,
        };
        let Some(chunk) = chunk else { return Ok(()) };
        let text = String::from_utf8_lossy(&chunk).into_owned();
        send(w, Response::Logs { text }).await?;
    }
}
