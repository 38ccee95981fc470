//! A throwaway Redis Cluster on 127.0.0.1: three masters with one replica each, made of real
//! `redis-server --cluster-enabled yes` processes joined by `redis-cli --cluster create`, each in
//! a temporary directory of its own, all killed when dropped.
//!
//! Node timeout 2000 ms (as the issue asks): a killed master's replica takes over about three
//! seconds later.
//!
//! Ports: a cluster node needs TCP (`--port 0` turns TCP off in redis-server, it does not pick a
//! port), so a port cannot be left to the system as oncebot's are. Each node gets a port that was
//! free a moment ago (and its bus port, +10000); another process may take either before the node
//! binds, so a node whose start fails with "Address already in use" is started again on another
//! port. A node counts as started only when its own log line (by its pid) says it is ready, so a
//! stranger on the port is never taken for it.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use oncebot::ledger::Keys;
use redis::AsyncCommands as _;
use tokio::process::{Child, Command};

use super::eventually;

/// How long the cluster may take to form, fail over, or take a node back.
pub const CLUSTER_DEADLINE: Duration = Duration::from_secs(30);

/// How many ports a node tries before the cluster gives up: each retry follows a port taken by
/// another process between the choice and the bind.
const PORT_TRIES: usize = 20;

/// How one start of a node ended.
#[derive(Debug, PartialEq, Eq)]
enum Started {
    Ready,
    /// Its port or bus port was taken; it exited.
    PortTaken,
}

pub struct Node {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Node {
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// Starts redis-server on `self.port` and waits until this process's own log lines say it
    /// is ready, or that its port is taken (then it has exited).
    async fn start(&mut self) -> Started {
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-node-timeout", "2000"])
            .arg("--cluster-config-file")
            .arg(self.dir.path().join("nodes.conf"))
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--save", "", "--appendonly", "no"])
            .arg("--logfile")
            .arg(self.dir.path().join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .expect("starting redis-server (apt-get install redis-server)");
        // A restart appends to the same log: only this process's lines count.
        let mine = format!("{}:", child.id().expect("a pid"));
        let what = format!("redis-server on port {} to be ready", self.port);
        let started = eventually(&what, CLUSTER_DEADLINE, || {
            // Whether it exited first: then its log is complete.
            let exited = matches!(child.try_wait(), Ok(Some(_)));
            let log = self.log();
            let said = |words: &str| {
                log.lines()
                    .any(|l| l.starts_with(mine.as_str()) && l.contains(words))
            };
            let seen = if said("Ready to accept connections") {
                Some(Started::Ready)
            } else if exited && said("Address already in use") {
                Some(Started::PortTaken)
            } else if exited {
                panic!("redis-server exited at start; its log:\n{log}")
            } else {
                None
            };
            async move { seen }
        })
        .await;
        if started == Started::Ready {
            self.child = Some(child);
        }
        started
    }

    /// Starts the node, on another port whenever its port turns out to be taken.
    async fn start_on_a_free_port(&mut self) {
        for _ in 0..PORT_TRIES {
            self.port = free_node_port();
            if self.start().await == Started::Ready {
                return;
            }
            // A fresh node: nothing of the failed start is kept.
            let _ = std::fs::remove_file(self.dir.path().join("nodes.conf"));
        }
        panic!("no free port for a cluster node after {PORT_TRIES} tries");
    }

    /// SIGKILL, as a crash.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}

/// Six nodes: after `start`, three masters (each with a third of the slots) and three replicas.
pub struct Cluster {
    pub nodes: Vec<Node>,
}

async fn connect(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url).ok()?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(5)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .ok()
}

/// A port that was free a moment ago (the system's pick for a bind to port 0), whose cluster
/// bus port (+10000) was free too. Not reserved: see the module's comment for the retry.
fn free_node_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("binding a port of the system's choice")
            .port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// One line of CLUSTER NODES, as far as the tests need it.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub id: String,
    pub port: u16,
    pub master: bool,
    pub failed: bool,
    /// A replica's master's id.
    pub master_id: Option<String>,
    /// A master's slot ranges.
    pub slots: Vec<(u16, u16)>,
}

impl Cluster {
    pub async fn start() -> Cluster {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            nodes.push(Node {
                port: 0,
                dir: tempfile::Builder::new()
                    .prefix("oncebot-cluster-")
                    .tempdir()
                    .unwrap(),
                child: None,
            });
        }
        for node in &mut nodes {
            node.start_on_a_free_port().await;
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .await
            .expect("running redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster { nodes };
        cluster.settled().await;
        cluster
    }

    /// Every running node says the cluster is ok, every master has a replica in sync, and all
    /// running nodes agree on who owns each slot.
    pub async fn settled(&self) {
        eventually("the cluster to settle", CLUSTER_DEADLINE, || async {
            let mut views = Vec::new();
            for node in self.nodes.iter().filter(|n| n.child.is_some()) {
                let mut conn = connect(&node.url()).await?;
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(&mut conn)
                    .await
                    .ok()?;
                if !info.contains("cluster_state:ok") {
                    return None;
                }
                let replication: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut conn)
                    .await
                    .ok()?;
                if replication.contains("role:slave")
                    && !replication.contains("master_link_status:up")
                {
                    return None;
                }
                views.push(self.view_from(node.port).await?);
            }
            let owners: Vec<Vec<(u16, (u16, u16))>> = views
                .iter()
                .map(|v| {
                    let mut o: Vec<_> = v
                        .iter()
                        .filter(|n| n.master && !n.failed)
                        .flat_map(|n| n.slots.iter().map(move |s| (n.port, *s)))
                        .collect();
                    o.sort();
                    o
                })
                .collect();
            owners.windows(2).all(|w| w[0] == w[1]).then_some(())
        })
        .await;
    }

    async fn view_from(&self, port: u16) -> Option<Vec<NodeView>> {
        let mut conn = connect(&format!("redis://127.0.0.1:{port}")).await?;
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(text.lines().filter_map(parse_node_line).collect())
    }

    /// What a running node says about the cluster.
    pub async fn view(&self) -> Vec<NodeView> {
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            if let Some(v) = self.view_from(node.port).await {
                return v;
            }
        }
        panic!("no cluster node answers CLUSTER NODES");
    }

    /// The index in `nodes` of the master that owns `key`'s slot.
    pub async fn master_of(&self, key: &str) -> usize {
        let slot = key_slot(key);
        let view = self.view().await;
        let owner = view
            .iter()
            .find(|n| {
                n.master && !n.failed && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
            })
            .expect("a master owns every slot");
        self.index_of(owner.port)
    }

    /// The indexes of the masters.
    pub async fn masters(&self) -> Vec<usize> {
        let view = self.view().await;
        view.iter()
            .filter(|n| n.master && !n.failed)
            .map(|n| self.index_of(n.port))
            .collect()
    }

    /// The index of a replica of the master at `master`.
    pub async fn replica_of(&self, master: usize) -> usize {
        let view = self.view().await;
        let port = self.nodes[master].port;
        let id = &view.iter().find(|n| n.port == port).unwrap().id;
        let replica = view
            .iter()
            .find(|n| n.master_id.as_deref() == Some(id) && !n.failed)
            .expect("the master has a replica");
        self.index_of(replica.port)
    }

    fn index_of(&self, port: u16) -> usize {
        self.nodes.iter().position(|n| n.port == port).unwrap()
    }

    /// `CLUSTER FAILOVER` on the replica at `replica`, then waits until it is the master.
    pub async fn failover(&self, replica: usize) {
        let mut conn = connect(&self.nodes[replica].url()).await.unwrap();
        let _: () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .query_async(&mut conn)
            .await
            .unwrap();
        self.wait_master(replica).await;
    }

    /// Waits until the node at `index` is a master that every running node sees as one.
    pub async fn wait_master(&self, index: usize) {
        let port = self.nodes[index].port;
        eventually("a replica to become master", CLUSTER_DEADLINE, || async {
            for node in self.nodes.iter().filter(|n| n.child.is_some()) {
                let view = self.view_from(node.port).await?;
                let me = view.iter().find(|n| n.port == port)?;
                if !me.master || me.slots.is_empty() {
                    return None;
                }
            }
            Some(())
        })
        .await;
    }

    /// SIGKILL of the node at `index`.
    pub async fn kill(&mut self, index: usize) {
        self.nodes[index].kill().await;
    }

    /// Starts the node at `index` again on its port and directory (its nodes.conf), so it
    /// rejoins the cluster (a killed master comes back as a replica of its successor).
    pub async fn restart(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        // The cluster knows the node by its port, so it cannot move; if another process took the
        // port in the seconds the node was down, the test cannot go on.
        let started = node.start().await;
        assert_eq!(
            started,
            Started::Ready,
            "port {} was taken while its node was down",
            node.port
        );
    }

    /// Every node's URL, comma-separated: `redis.url` for several seed nodes.
    pub fn all_urls(&self) -> String {
        self.nodes
            .iter()
            .map(Node::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A connection that follows the cluster, for looking at what the ledger wrote.
    pub async fn client(&self) -> redis::cluster_async::ClusterConnection {
        let urls: Vec<String> = self.nodes.iter().map(Node::url).collect();
        redis::cluster::ClusterClient::builder(urls)
            .response_timeout(Duration::from_secs(5))
            .build()
            .unwrap()
            .get_async_connection()
            .await
            .unwrap()
    }

    /// A job's HASH (empty if it does not exist), read through the cluster.
    pub async fn job(&self, id: u64) -> BTreeMap<String, String> {
        let mut conn = self.client().await;
        conn.hgetall(Keys::new("oncebot").job(id)).await.unwrap()
    }
}

/// CRC16 of the hash tag, as Redis Cluster computes a key's slot.
pub fn key_slot(key: &str) -> u16 {
    let tag = match (key.find('{'), key.find('}')) {
        (Some(a), Some(b)) if b > a + 1 => &key[a + 1..b],
        _ => key,
    };
    let mut crc: u16 = 0;
    for byte in tag.bytes() {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

fn parse_node_line(line: &str) -> Option<NodeView> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 8 {
        return None;
    }
    let port = f[1].split('@').next()?.rsplit(':').next()?.parse().ok()?;
    let flags = f[2];
    let slots = f[8..]
        .iter()
        .filter(|s| !s.starts_with('['))
        .filter_map(|s| match s.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => s.parse().ok().map(|a| (a, a)),
        })
        .collect();
    Some(NodeView {
        id: f[0].to_string(),
        port,
        master: flags.contains("master"),
        failed: flags.contains("fail") && !flags.contains("fail?") || flags.contains("noaddr"),
        master_id: (f[3] != "-").then(|| f[3].to_string()),
        slots,
    })
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(child) = node.child.as_mut() {
                let _ = child.start_kill();
            }
        }
    }
}
