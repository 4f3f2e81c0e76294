//! The network watch in the owner loop: opened at start when `[init.network]` is set, its
//! outcomes logged and announced like the core's notices, its verdict to give up fed to the
//! core as [`Input::GiveUp`] (the normal way down, then `exit_code`), and its state added to
//! `status`, `/readyz` and `/metrics`.

use super::*;
use crate::model::protocol::NetworkStatus;
use crate::supervisor::telemetry::{Metrics, NetworkMetrics, ProbeAnswer};
use crate::supervisor::watch::links::Links;
use crate::supervisor::watch::network_rules::Outcome;

impl Runner {
    /// Starts the watch when the configuration asks for one; a watch that cannot start is
    /// said once (the container runs on without it).
    pub(super) fn open_network_watch(&mut self) {
        let Some(settings) = self.config.init.network.clone() else {
            return;
        };
        match Links::open(settings) {
            Ok((links, outcomes)) => {
                self.network = Some(links);
                self.network_outcomes(outcomes);
            }
            Err(e) => error!("network: {e}; [init.network] is not watched"),
        }
    }

    /// Link events arrived, or the grace is over.
    pub(super) fn on_network(&mut self) {
        let Some(links) = &mut self.network else {
            return;
        };
        let outcomes = links.turn();
        self.network_outcomes(outcomes);
    }

    fn network_outcomes(&mut self, outcomes: Vec<Outcome>) {
        for outcome in outcomes {
            match outcome {
                Outcome::Note(level, message) => {
                    let n = Notice {
                        program: None,
                        level,
                        transition: None,
                        message,
                        health: None,
                    };
                    log_notice(&n);
                    self.announce(n);
                }
                Outcome::GiveUp { code, line } => self.feed(Input::GiveUp {
                    code,
                    reason: "the network is lost".into(),
                    message: line,
                }),
            }
        }
    }

    /// `status`'s network part.
    pub(super) fn network_status(&self) -> Option<NetworkStatus> {
        let links = self.network.as_ref()?;
        Some(links.watch.status(Instant::now()))
    }

    /// `/readyz`: not ready while every watched interface is gone.
    pub(super) fn network_readiness(&self, answer: &mut ProbeAnswer) {
        let Some(links) = &self.network else { return };
        if !links.watch.usable() {
            let names: Vec<&str> = links
                .watch
                .watched()
                .iter()
                .map(|w| w.name.as_str())
                .collect();
            answer.ready = false;
            answer
                .not_ready
                .push(format!("the network is lost ({} gone)", names.join(", ")));
        }
    }

    /// `/metrics`' network families.
    pub(super) fn network_metrics(&self, m: &mut Metrics) {
        let Some(links) = &self.network else { return };
        let w = &links.watch;
        m.network = Some(NetworkMetrics {
            watched: w.watched().len(),
            present: w.watched().iter().filter(|i| i.present).count(),
            lost: !w.usable(),
            losses: w.losses,
        });
    }
}
