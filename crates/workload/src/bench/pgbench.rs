//! pgbench read-only (`-S`, builtin "select-only"; PostgreSQL `src/bin/pgbench/pgbench.c`;
//! workloads.md §8): `pgbench -S -c clients -j threads -T secs [-M mode] [-h host] [dbname]`.
//!
//! # Model (§8.4)
//!
//! * Tasks: the `pgbench` process's J threads (thread 0 is the main thread, the others are
//!   created by it with `Spawn`; all share one `mm`), and one `postgres` backend process per
//!   client (own `mm`, running from the start: the connections are opened before the
//!   benchmark). Clients are dealt to threads as pgbench does (earlier threads get the extra).
//! * Objects per client: a query channel and a result channel, `UnixStream` (default, or `-h`
//!   naming a socket directory) or `TcpLoopback` (`-h localhost`/`127.0.0.1`).
//! * Backend: `epoll_wait` on its socket, read the query, execute it ([`backend_ns`] of CPU),
//!   send the result row.
//! * pgbench thread: marks the start, sends the first query of each of its clients, then, in
//!   client order, waits for a client's result (`ppoll` on that socket, then the read), counts
//!   the transaction, spends [`CLIENT_NS`] and sends the client's next query. With one client
//!   per thread this is the strict ping-pong of TCP_RR; with several, the thread serves its
//!   clients round-robin, which is the order results arrive in when backends are alike
//!   (pgbench serves whichever socket is ready first).
//! * `-T secs` bounds the simulation; `-t N` (default 10) runs N transactions per client and
//!   ends by itself.
//! * Metric: `tps` = transactions / (end − first thread start), pgbench's definition without
//!   connection time. `initial connection time` is not modelled and prints as 0.000 ms.
//!
//! Costs are **\[estimates\]** (§8.4: backend 15–40 µs, client 3–10 µs per transaction) chosen
//! so one client lands near the ≈62 µs/transaction anchor with the engine's kernel costs.

use sim::ipc::ObjectSpec;
use sim::program::Op;

use super::args::{OptDef, Style, getopt, int};
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, not_modelled, usage};

const BENCH: &str = "pgbench";
/// Mark id of the first thread's start (local).
pub const MARK_START: u16 = 0;
/// Mark id of the last result of a `-t` run.
pub const MARK_END: u16 = 1;
/// Count id of the transactions.
pub const COUNT_TXN: u16 = 0;
/// pgbench user-mode work per transaction (result processing, next query) **\[estimate\]**.
pub const CLIENT_NS: u64 = 8_000;
/// The PostgreSQL version printed in the first line.
pub const PG_VERSION: &str = "18.1";
/// `net.core.wmem_default`, the unix socket send buffer.
const UNIX_SNDBUF: u32 = 212_992;
/// `tcp_wmem[1]`.
const TCP_SNDBUF: u32 = 16_384;

/// pgbench's `-M/--protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryMode {
    /// `simple` (default): one Query message.
    Simple,
    /// `extended`: Parse/Bind/Execute each time.
    Extended,
    /// `prepared`: Bind/Execute of a prepared statement.
    Prepared,
}

impl QueryMode {
    fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// Backend CPU time per select-only transaction **\[estimate\]**: parse/plan/execute of the
/// index lookup (simple), plus the extended protocol's extra messages, or execute only
/// (prepared).
pub fn backend_ns(mode: QueryMode) -> u64 {
    match mode {
        QueryMode::Simple => 35_000,
        QueryMode::Extended => 40_000,
        QueryMode::Prepared => 25_000,
    }
}

/// `(query bytes, result bytes)` on the wire per transaction.
fn message_sizes(mode: QueryMode) -> (u32, u32) {
    match mode {
        // Q message with the SELECT text; RowDescription + DataRow + CommandComplete + ReadyForQuery.
        QueryMode::Simple => (64, 128),
        // Parse + Bind + Describe + Execute + Sync.
        QueryMode::Extended => (128, 128),
        // Bind + Execute + Sync.
        QueryMode::Prepared => (48, 96),
    }
}

/// pgbench flags (select-only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pgbench {
    /// `-c/--client` (1).
    pub clients: u32,
    /// `-j/--jobs` (1), reduced to `clients` as pgbench does.
    pub threads: u32,
    /// `-T/--time` seconds, or `None` with `-t`.
    pub duration_s: Option<u32>,
    /// `-t/--transactions` per client (10 when neither -t nor -T is given).
    pub transactions: Option<u32>,
    /// `-M/--protocol` (simple).
    pub mode: QueryMode,
    /// `-s/--scale` (1; printed only — the data set is not simulated).
    pub scale: u32,
    /// `-n/--no-vacuum`.
    pub no_vacuum: bool,
    /// `-h` names a TCP host (localhost/127.0.0.1) rather than a socket directory.
    pub tcp: bool,
}

const OPTS: &[OptDef] = &[
    OptDef { key: "builtin", short: Some('b'), long: Some("builtin"), value: true },
    OptDef { key: "client", short: Some('c'), long: Some("client"), value: true },
    OptDef { key: "connect", short: Some('C'), long: Some("connect"), value: false },
    OptDef { key: "dbname", short: Some('d'), long: Some("dbname"), value: true },
    OptDef { key: "define", short: Some('D'), long: Some("define"), value: true },
    OptDef { key: "file", short: Some('f'), long: Some("file"), value: true },
    OptDef { key: "fillfactor", short: Some('F'), long: Some("fillfactor"), value: true },
    OptDef { key: "host", short: Some('h'), long: Some("host"), value: true },
    OptDef { key: "initialize", short: Some('i'), long: Some("initialize"), value: false },
    OptDef { key: "init-steps", short: Some('I'), long: Some("init-steps"), value: true },
    OptDef { key: "jobs", short: Some('j'), long: Some("jobs"), value: true },
    OptDef { key: "log", short: Some('l'), long: Some("log"), value: false },
    OptDef { key: "latency-limit", short: Some('L'), long: Some("latency-limit"), value: true },
    OptDef { key: "no-vacuum", short: Some('n'), long: Some("no-vacuum"), value: false },
    OptDef { key: "port", short: Some('p'), long: Some("port"), value: true },
    OptDef { key: "progress", short: Some('P'), long: Some("progress"), value: true },
    OptDef { key: "protocol", short: Some('M'), long: Some("protocol"), value: true },
    OptDef { key: "quiet", short: Some('q'), long: Some("quiet"), value: false },
    OptDef { key: "report-per-command", short: Some('r'), long: Some("report-per-command"), value: false },
    OptDef { key: "rate", short: Some('R'), long: Some("rate"), value: true },
    OptDef { key: "scale", short: Some('s'), long: Some("scale"), value: true },
    OptDef { key: "select-only", short: Some('S'), long: Some("select-only"), value: false },
    OptDef { key: "skip-some-updates", short: Some('N'), long: Some("skip-some-updates"), value: false },
    OptDef { key: "time", short: Some('T'), long: Some("time"), value: true },
    OptDef { key: "transactions", short: Some('t'), long: Some("transactions"), value: true },
    OptDef { key: "username", short: Some('U'), long: Some("username"), value: true },
    OptDef { key: "vacuum-all", short: Some('v'), long: Some("vacuum-all"), value: false },
    OptDef { key: "aggregate-interval", short: None, long: Some("aggregate-interval"), value: true },
    OptDef { key: "sampling-rate", short: None, long: Some("sampling-rate"), value: true },
    OptDef { key: "random-seed", short: None, long: Some("random-seed"), value: true },
    OptDef { key: "max-tries", short: None, long: Some("max-tries"), value: true },
    OptDef { key: "progress-timestamp", short: None, long: Some("progress-timestamp"), value: false },
    OptDef { key: "failures-detailed", short: None, long: Some("failures-detailed"), value: false },
    OptDef { key: "verbose-errors", short: None, long: Some("verbose-errors"), value: false },
    OptDef { key: "debug", short: None, long: Some("debug"), value: false },
];

/// `option_parse_int(optarg, name, min, INT_MAX)`.
fn pos_int(flag: &str, name: &str, s: &str, min: i64) -> Result<u32, WorkloadError> {
    let v = int(BENCH, flag, s)?;
    if v < min || v > i64::from(i32::MAX) {
        return usage(BENCH, format!("{name} must be in range {min}..{}", i32::MAX));
    }
    Ok(v as u32)
}

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style::default())?;
    let mut p = Pgbench {
        clients: 1,
        threads: 1,
        duration_s: None,
        transactions: None,
        mode: QueryMode::Simple,
        scale: 1,
        no_vacuum: false,
        tcp: false,
    };
    let mut select_only = false;
    let mut dbname = false;
    for f in &parsed.opts {
        match f.key {
            "select-only" => select_only = true,
            "builtin" => {
                // `findBuiltin`: a unique prefix of a builtin name, with an optional @weight.
                let name = f.val().split('@').next().unwrap_or("");
                let builtins = ["tpcb-like", "simple-update", "select-only"];
                let found: Vec<&str> =
                    builtins.iter().copied().filter(|b| !name.is_empty() && b.starts_with(name)).collect();
                match found.as_slice() {
                    ["select-only"] => select_only = true,
                    [other] => {
                        return not_modelled(
                            BENCH,
                            &format!("{} {other}", f.flag),
                            "read-write script",
                            "only select-only is modelled",
                        );
                    }
                    _ => return usage(BENCH, format!("no builtin script found for name \"{name}\"")),
                }
            }
            "client" => p.clients = pos_int(&f.flag, "-c/--client", f.val(), 1)?,
            "jobs" => p.threads = pos_int(&f.flag, "-j/--jobs", f.val(), 1)?,
            "time" => p.duration_s = Some(pos_int(&f.flag, "-T/--time", f.val(), 1)?),
            "transactions" => p.transactions = Some(pos_int(&f.flag, "-t/--transactions", f.val(), 1)?),
            "scale" => p.scale = pos_int(&f.flag, "-s/--scale", f.val(), 1)?,
            "no-vacuum" => p.no_vacuum = true,
            "protocol" => {
                p.mode = match f.val() {
                    "simple" => QueryMode::Simple,
                    "extended" => QueryMode::Extended,
                    "prepared" => QueryMode::Prepared,
                    other => return usage(BENCH, format!("invalid query mode (-M): \"{other}\"")),
                }
            }
            "host" => {
                let h = f.val();
                if h.starts_with('/') {
                    p.tcp = false;
                } else if matches!(h, "localhost" | "127.0.0.1") {
                    p.tcp = true;
                } else {
                    return not_modelled(
                        BENCH,
                        &format!("{} {h}", f.flag),
                        "remote server",
                        "only a local server is simulated",
                    );
                }
            }
            // Connection parameters: they name the server, which the model is.
            "port" | "username" => {}
            "dbname" => dbname = true,
            "connect" => return not_modelled(BENCH, &f.flag, "a new connection per transaction", ""),
            "file" | "define" => return not_modelled(BENCH, &f.flag, "custom scripts", "only select-only is modelled"),
            "skip-some-updates" => {
                return not_modelled(BENCH, &f.flag, "simple-update script", "only select-only is modelled");
            }
            "initialize" | "init-steps" | "fillfactor" | "quiet" => {
                return not_modelled(BENCH, &f.flag, "initialization mode", "the database is not simulated");
            }
            "rate" => return not_modelled(BENCH, &f.flag, "rate limiting", ""),
            "latency-limit" => return not_modelled(BENCH, &f.flag, "latency limit", ""),
            "progress" | "progress-timestamp" => {
                return not_modelled(BENCH, &f.flag, "progress reports", "per-interval rates are not recorded");
            }
            "report-per-command" => {
                return not_modelled(BENCH, &f.flag, "per-statement latencies", "");
            }
            "log" | "aggregate-interval" | "sampling-rate" => {
                return not_modelled(BENCH, &f.flag, "transaction log", "");
            }
            "vacuum-all" => return not_modelled(BENCH, &f.flag, "vacuum of pgbench_accounts", ""),
            "random-seed" | "max-tries" | "failures-detailed" | "verbose-errors" | "debug" => {
                return not_modelled(BENCH, &f.flag, "option", "it does not apply to the model");
            }
            _ => unreachable!("option table"),
        }
    }
    match parsed.operands.as_slice() {
        [] => {}
        [_] if !dbname => {}
        [_, extra, ..] | [extra] => {
            return usage(BENCH, format!("too many command-line arguments (first is \"{extra}\")"));
        }
    }
    if !select_only {
        return not_modelled(BENCH, "(no -S)", "TPC-B-like read-write script", "give -S (-b select-only)");
    }
    if p.duration_s.is_some() && p.transactions.is_some() {
        return usage(BENCH, "specify either a number of transactions (-t) or a duration (-T), not both");
    }
    if p.duration_s.is_none() && p.transactions.is_none() {
        p.transactions = Some(10);
    }
    p.threads = p.threads.min(p.clients);
    if u64::from(p.clients) > 1 << 16 {
        return usage(BENCH, format!("{} clients are more than schedlab simulates", p.clients));
    }
    let (tasks, objects) = build(&p);
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: p.duration_s.map(|s| u64::from(s) * 1_000_000_000),
        metric: MetricSpec { name: "tps", better: Better::Higher },
        params: BenchParams::Pgbench(p),
    })
}

fn build(p: &Pgbench) -> (Vec<sim::program::TaskSpec>, Vec<ObjectSpec>) {
    let (n, j) = (p.clients, p.threads);
    let chan = if p.tcp {
        ObjectSpec::TcpLoopback { sndbuf: TCP_SNDBUF }
    } else {
        ObjectSpec::UnixStream { sndbuf: UNIX_SNDBUF }
    };
    let objects = vec![chan; 2 * n as usize];
    let query = |c: u32| 2 * c;
    let result = |c: u32| 2 * c + 1;
    let (qbytes, rbytes) = message_sizes(p.mode);
    let work = backend_ns(p.mode);
    let count = p.transactions.map(u64::from);

    // Client ranges per thread: `(nclients - dealt + nthreads - i - 1) / (nthreads - i)`.
    let mut ranges = Vec::new();
    let mut dealt = 0;
    for i in 0..j {
        let k = (n - dealt + j - i - 1) / (j - i);
        ranges.push(dealt..dealt + k);
        dealt += k;
    }

    // Tasks: 0..j pgbench threads (0 not spawned), then n backends.
    let mut tasks = Vec::new();
    for (i, range) in ranges.iter().enumerate() {
        let mut t = Prog::new();
        if i == 0 {
            for spec in 1..j {
                t.op(Op::Spawn { spec });
            }
        }
        t.op(Op::Mark { id: MARK_START });
        let clients: Vec<u32> = range.clone().collect();
        for &c in &clients {
            t.run(CLIENT_NS);
            t.op(Op::Write { obj: query(c), bytes: qbytes });
        }
        let one_round = |t: &mut Prog| {
            for (k, &c) in clients.iter().enumerate() {
                t.op(Op::Poll { set: k as u32 })
                    .op(Op::Read { obj: result(c), bytes: rbytes, exact: true })
                    .op(Op::Count { id: COUNT_TXN });
                t.run(CLIENT_NS);
                t.op(Op::Write { obj: query(c), bytes: qbytes });
            }
        };
        match count {
            // The last round reads the final results and sends nothing more.
            Some(c) => {
                t.repeat(c - 1, &one_round);
                for (k, &c) in clients.iter().enumerate() {
                    t.op(Op::Poll { set: k as u32 })
                        .op(Op::Read { obj: result(c), bytes: rbytes, exact: true })
                        .op(Op::Count { id: COUNT_TXN });
                }
                t.op(Op::Mark { id: MARK_END });
                if i == 0 {
                    t.op(Op::WaitChildren);
                }
            }
            None => {
                t.forever(&one_round);
            }
        }
        let mut spec = t.task("pgbench", 0, i > 0);
        spec.poll_sets = clients.iter().map(|&c| vec![result(c)]).collect();
        tasks.push(spec);
    }
    for c in 0..n {
        let mut b = Prog::new();
        b.repeat_or_forever(count, &|b| {
            b.op(Op::EpollWait { set: 0 }).op(Op::Read { obj: query(c), bytes: qbytes, exact: true });
            b.run(work);
            b.op(Op::Write { obj: result(c), bytes: rbytes });
        });
        let mut spec = b.task("postgres", 1 + c, false);
        spec.poll_sets = vec![vec![query(c)]];
        tasks.push(spec);
    }
    (tasks, objects)
}

impl Pgbench {
    /// Benchmark duration in ns: first thread start to the last result (`-t`) or the end.
    fn duration_ns(&self, v: &View) -> Option<u64> {
        match self.transactions {
            Some(_) => v.span(MARK_START, MARK_END),
            None => v.since(MARK_START),
        }
    }

    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        match self.duration_ns(v) {
            Some(ns) if ns > 0 => v.count(COUNT_TXN) as f64 / (ns as f64 / 1e9),
            _ => f64::NAN,
        }
    }

    /// `printVersion`, the vacuum line (stderr) and `printResults`.
    pub(crate) fn format_output(&self, v: &View) -> String {
        let mut s = format!("pgbench ({PG_VERSION})\n");
        if !self.no_vacuum {
            s += "starting vacuum...end.\n";
        }
        let cnt = v.count(COUNT_TXN);
        s += "transaction type: <builtin: select only>\n";
        s += &format!("scaling factor: {}\n", self.scale);
        s += &format!("query mode: {}\n", self.mode.name());
        s += &format!("number of clients: {}\n", self.clients);
        s += &format!("number of threads: {}\n", self.threads);
        s += "maximum number of tries: 1\n";
        match (self.duration_s, self.transactions) {
            (Some(d), _) => {
                s += &format!("duration: {d} s\n");
                s += &format!("number of transactions actually processed: {cnt}\n");
            }
            (None, t) => {
                let t = t.unwrap_or(10);
                s += &format!("number of transactions per client: {t}\n");
                s += &format!(
                    "number of transactions actually processed: {cnt}/{}\n",
                    u64::from(t) * u64::from(self.clients)
                );
            }
        }
        if cnt == 0 {
            return s;
        }
        let dur_us = self.duration_ns(v).unwrap_or(0) / 1_000;
        s += "number of failed transactions: 0 (0.000%)\n";
        s += &format!("latency average = {:.3} ms\n", 0.001 * dur_us as f64 * f64::from(self.clients) / cnt as f64);
        s += "initial connection time = 0.000 ms\n";
        let tps = if dur_us > 0 { cnt as f64 / (dur_us as f64 / 1e6) } else { 0.0 };
        s += &format!("tps = {tps:.6} (without initial connection time)\n");
        s
    }
}
