//! Serving lanes: a few threads, each running its own single-threaded tokio runtime. The accept
//! loop hands every accepted connection to the lane with the fewest open connections, and from
//! then on the connection's requests, the tasks they spawn and their upstream calls (each lane
//! names its own upstream pools through the hook it starts with) run on that one thread. On the
//! shared work-stealing runtime a request's wake-ups crossed threads several times (the upstream
//! connection's task, a stolen task, the idle worker woken to steal), each crossing a futex wake
//! and, on a virtual machine, an interrupt through the hypervisor (bench/README.md, "Serving
//! lanes").
//!
//! Lanes run until [`Lanes::stop`], after the gateway has drained its connections and closed its
//! state, because tasks spawned on a lane (a journal append, a webhook worker started by an API
//! call) live on its runtime and are driven only while it runs.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use futures_util::future::BoxFuture;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The serving threads. Dropping them without [`Lanes::stop`] ends them too, without waiting.
pub struct Lanes {
    lanes: Vec<Lane>,
    threads: Vec<JoinHandle<()>>,
}

struct Lane {
    jobs: mpsc::UnboundedSender<BoxFuture<'static, ()>>,
    /// Connections handed to this lane and not yet closed.
    open: Arc<AtomicUsize>,
}

impl Lanes {
    /// Starts `n` lanes (at least one); each thread first calls `on_thread` with its lane's
    /// number (the gateway points the thread at that lane's upstream pools).
    pub fn start(
        n: usize,
        on_thread: impl Fn(usize) + Send + Sync + 'static,
    ) -> std::io::Result<Lanes> {
        let on_thread = Arc::new(on_thread);
        let mut lanes = Vec::with_capacity(n);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                // Before the lane sleeps, whoever else is ready on its CPU runs (a writer
                // thread, the upstream, the client): the lane's next wait often finds its
                // events there and does not sleep, and a sleep and a wake-up are the costly
                // part (bench/README.md, "Yielding before a commit").
                .on_thread_park(std::thread::yield_now)
                .build()?;
            let (jobs, mut queue) = mpsc::unbounded_channel::<BoxFuture<'static, ()>>();
            let on_thread = on_thread.clone();
            let thread = std::thread::Builder::new()
                .name(format!("sovereign-lane-{i}"))
                .spawn(move || {
                    on_thread(i);
                    runtime.block_on(async move {
                        while let Some(job) = queue.recv().await {
                            tokio::spawn(job);
                        }
                    });
                    // Dropping the runtime here cancels what is left on it; the gateway has
                    // finished by now (`stop`).
                })?;
            lanes.push(Lane {
                jobs,
                open: Arc::new(AtomicUsize::new(0)),
            });
            threads.push(thread);
        }
        Ok(Lanes { lanes, threads })
    }

    /// Runs `conn` on the lane with the fewest open connections, with `stream` registered on that
    /// lane's runtime. A stream that cannot move (it was closed meanwhile) is dropped.
    pub fn run<F, Fut>(&self, stream: TcpStream, conn: F)
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                return tracing::debug!(error = %e, "connection closed before its lane took it");
            }
        };
        // `start` made at least one.
        let Some(lane) = self
            .lanes
            .iter()
            .min_by_key(|l| l.open.load(Ordering::Relaxed))
        else {
            return;
        };
        let open = OpenConnection::new(lane.open.clone());
        let job = Box::pin(async move {
            let _open = open;
            // First polled on the lane, so the socket registers with the lane's reactor.
            match TcpStream::from_std(stream) {
                Ok(stream) => conn(stream).await,
                Err(e) => {
                    tracing::debug!(error = %e, "could not register a connection on its lane")
                }
            }
        });
        if lane.jobs.send(job).is_err() {
            tracing::debug!("lane stopped; connection dropped");
        }
    }

    /// Ends the lanes (what is still running on them is cancelled) and waits for their threads.
    pub async fn stop(self) {
        let Lanes { lanes, threads } = self;
        drop(lanes);
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                if t.join().is_err() {
                    tracing::error!("a serving lane panicked");
                }
            }
        });
        if joined.await.is_err() {
            tracing::error!("waiting for the serving lanes failed");
        }
    }
}

/// One open connection counted on its lane, until dropped.
struct OpenConnection(Arc<AtomicUsize>);

impl OpenConnection {
    fn new(open: Arc<AtomicUsize>) -> OpenConnection {
        open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(open)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    thread_local! {
        static LANE: Cell<Option<usize>> = const { Cell::new(None) };
    }

    #[tokio::test]
    async fn connections_go_to_the_least_busy_lane_and_run_there() {
        let lanes = Lanes::start(2, |i| LANE.with(|l| l.set(Some(i)))).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (seen, mut ran) = mpsc::unbounded_channel();
        let (hold, release) = tokio::sync::watch::channel(false);
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(TcpStream::connect(addr).await.unwrap());
            let (stream, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
            let mut release = release.clone();
            lanes.run(stream, move |_stream| async move {
                seen.send(LANE.with(Cell::get)).unwrap();
                // Stay open until released, so the lane's count holds.
                let _ = release.wait_for(|r| *r).await;
            });
            // Counted at hand-over, so the next pick already sees it.
        }
        let mut per_lane = [0; 2];
        for _ in 0..4 {
            per_lane[ran.recv().await.unwrap().unwrap()] += 1;
        }
        assert_eq!(per_lane, [2, 2]);
        assert_eq!(LANE.with(Cell::get), None);
        hold.send(true).unwrap();
        lanes.stop().await;
    }
}
