//! The concurrent graph walk shared by plan, apply and destroy.
//!
//! Each node starts when all of its dependencies have finished. Starting a node is synchronous
//! (evaluation needs the walk's state); what it returns, if anything, is a future that does the
//! slow part (provider calls) while other nodes start. **Invariant:** a node never starts before
//! its dependencies finish, and every node either starts or is skipped exactly once.

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) trait Steps {
    type Outcome: Send + 'static;

    /// Does the synchronous part of a node; returns the asynchronous rest, if any.
    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Self::Outcome>>;

    fn finish(&mut self, node: NodeIndex, outcome: Self::Outcome);
}

/// Walks `graph`; once `stop` is set no new node starts, and the walk ends when the ones in
/// flight have finished (Ctrl-C).
pub(crate) async fn run<N, E, S: Steps>(
    graph: &DiGraph<N, E>,
    steps: &mut S,
    stop: &Arc<AtomicBool>,
) {
    let mut indegree: Vec<usize> = graph
        .node_indices()
        .map(|n| graph.edges_directed(n, Direction::Incoming).count())
        .collect();
    let mut ready: VecDeque<NodeIndex> = graph
        .node_indices()
        .filter(|n| indegree[n.index()] == 0)
        .collect();
    let mut in_flight = FuturesUnordered::new();
    let release = |node: NodeIndex, indegree: &mut Vec<usize>, ready: &mut VecDeque<NodeIndex>| {
        for edge in graph.edges_directed(node, Direction::Outgoing) {
            let target = edge.target();
            indegree[target.index()] -= 1;
            if indegree[target.index()] == 0 {
                ready.push_back(target);
            }
        }
    };
    loop {
        while !stop.load(Ordering::SeqCst)
            && let Some(node) = ready.pop_front()
        {
            match steps.start(node) {
                Some(future) => in_flight.push(async move { (node, future.await) }),
                None => release(node, &mut indegree, &mut ready),
            }
        }
        let Some((node, outcome)) = in_flight.next().await else {
            break;
        };
        steps.finish(node, outcome);
        release(node, &mut indegree, &mut ready);
    }
}
