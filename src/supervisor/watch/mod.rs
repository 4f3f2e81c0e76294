//! What ctrlinit watches of its container, beyond its programs: the network interfaces of its
//! namespace (`[init.network]`). A container that shares another container's network (`docker
//! run --network container:X`, compose `network_mode: service:x`, a pod's infra container)
//! keeps only `lo` when that holder restarts in a new namespace; ctrlinit sees its interfaces
//! go and, with `on_lost = "exit"`, stops the container so the engine restarts it in the new
//! one.
//!
//! `network_rules.rs` decides (pure, explicit instants); `links.rs` is the shell: the kernel's link
//! events through a netlink socket in the owner loop (no polling: an idle container makes no
//! wake-ups), a bounded batch per turn, and the grace deadline as the only timer.

pub mod links;
pub mod network_rules;
#[cfg(test)]
mod network_rules_tests;
