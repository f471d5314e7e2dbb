//! netperf TCP_RR over loopback (HewlettPackard/netperf, omni "MIGRATED" test; workloads.md
//! §6): `netperf -t TCP_RR [-l secs] [-H host] [-T lcpu,rcpu] [-P 0|1] [-v 0|1] -- [-r req,resp] [-D]`.
//!
//! # Model (§6.5)
//!
//! * Two processes: the `netperf` client (task 0) and the `netserver` child serving it (task 1,
//!   its own `mm`); the netserver daemon parent sleeps in `accept()` and is not simulated.
//! * Objects: one `TcpLoopback` per direction (`sndbuf` 16 384, `tcp_wmem[1]`). The engine
//!   charges the sender the transmit path with the inline NET_RX softirq and wakes the
//!   receiver WF_SYNC from it.
//! * Client: mark the start, then per transaction `send(req)`, `recv` until `resp` bytes,
//!   count it. Server: `recv` until `req` bytes, `send(resp)`. One transaction outstanding.
//! * `-l secs` bounds the simulation; `-l -N` (netperf's transaction-count form) runs N
//!   transactions and the simulation ends by itself.
//! * `-T l,r` binds the client to CPU l and the server to CPU r (`-T n` binds both to n).
//! * Metric: `transactions_per_sec` = transactions / elapsed since the start mark.
//! * `--clients N` (a schedlab option, not netperf's): N client/server pairs at once, each with
//!   its own sockets and processes, as mmtests' netperf runs start N netperf instances beside
//!   N netservers. Each pair prints its own result block, as each netperf would; the metric is
//!   the sum of their rates.
//!
//! Rejected: tests other than TCP_RR, remote hosts, confidence intervals (`-i`/`-I`: run
//! several seeds instead), CPU utilisation (`-c`/`-C`), burst and other test-specific
//! options, and the global options that do not change a loopback TCP_RR run.

use sim::ipc::ObjectSpec;
use sim::program::Op;

use super::args::{OptDef, Style, getopt, int, opt};
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, not_modelled, usage};

const BENCH: &str = "netperf";
/// Mark id of the start of the test (local).
pub const MARK_START: u16 = 0;
/// Count id of the first client's transactions; client k counts at `COUNT_TXN + k`.
pub const COUNT_TXN: u16 = 0;
/// Send and receive socket sizes netperf reports on a default Linux loopback run.
/// Local/remote send socket size.
pub const SOCKET_SEND: u32 = 16_384;
/// Local/remote receive socket size.
pub const SOCKET_RECV: u32 = 131_072;

/// netperf TCP_RR flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Netperf {
    /// `-l`: `Seconds(n)` for n > 0, `Transactions(n)` for `-l -n`.
    pub length: TestLength,
    /// `-H` (localhost).
    pub host: String,
    /// `-T lcpu,rcpu`.
    pub local_cpu: Option<u32>,
    /// The netserver side of `-T`.
    pub remote_cpu: Option<u32>,
    /// `-- -r req,resp` (1,1).
    pub request_size: u32,
    /// The response size of `-r`.
    pub response_size: u32,
    /// `-- -D` (TCP_NODELAY; no effect with one outstanding request).
    pub nodelay: bool,
    /// `-P 0` suppresses the banner and titles.
    pub banner: bool,
    /// `-v` verbosity (1; 0 prints only the rate).
    pub verbosity: u32,
    /// `--clients N`: concurrent client/server pairs (1).
    pub clients: u32,
}

/// At most this many `--clients` (each pair takes one count id of the workload's 1024).
pub const MAX_CLIENTS: u32 = 512;

/// How long a netperf test runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestLength {
    /// `-l n`, n > 0.
    Seconds(u32),
    /// `-l -n`.
    Transactions(u64),
}

const GLOBAL: &[OptDef] = &[
    opt("t", Some('t'), None, true),
    opt("l", Some('l'), None, true),
    opt("H", Some('H'), None, true),
    opt("T", Some('T'), None, true),
    opt("P", Some('P'), None, true),
    opt("v", Some('v'), None, true),
    opt("i", Some('i'), None, true),
    opt("I", Some('I'), None, true),
    opt("c", Some('c'), None, false),
    opt("C", Some('C'), None, false),
    opt("D", Some('D'), None, true),
    opt("f", Some('f'), None, true),
    opt("p", Some('p'), None, true),
    opt("L", Some('L'), None, true),
    opt("4", Some('4'), None, false),
    opt("6", Some('6'), None, false),
    opt("n", Some('n'), None, true),
    opt("N", Some('N'), None, false),
    opt("o", Some('o'), None, true),
    opt("O", Some('O'), None, true),
    opt("a", Some('a'), None, true),
    opt("A", Some('A'), None, true),
    opt("B", Some('B'), None, true),
    opt("d", Some('d'), None, false),
    opt("h", Some('h'), None, false),
    opt("V", Some('V'), None, false),
    opt("j", Some('j'), None, false),
    opt("clients", None, Some("clients"), true),
];

const TEST: &[OptDef] = &[
    opt("r", Some('r'), None, true),
    opt("D", Some('D'), None, false),
    opt("s", Some('s'), None, true),
    opt("S", Some('S'), None, true),
    opt("b", Some('b'), None, true),
    opt("P", Some('P'), None, true),
    opt("H", Some('H'), None, true),
    opt("L", Some('L'), None, true),
    opt("m", Some('m'), None, true),
    opt("M", Some('M'), None, true),
    opt("o", Some('o'), None, true),
    opt("O", Some('O'), None, true),
    opt("k", Some('k'), None, true),
    opt("h", Some('h'), None, false),
];

/// netperf's `convert()`: an integer with an optional K/M/G (×1024ⁿ) or k/m/g (×1000ⁿ) suffix.
fn convert(flag: &str, s: &str) -> Result<u64, WorkloadError> {
    let (num, mult) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('k') => (&s[..s.len() - 1], 1_000),
        Some('m') => (&s[..s.len() - 1], 1_000_000),
        Some('g') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    let v = int(BENCH, flag, num)?;
    if v < 0 {
        return usage(BENCH, format!("{flag}: `{s}` is negative"));
    }
    Ok(v as u64 * mult)
}

/// netperf's `break_args()`: `a,b` → (a, b); `a` → (a, a); `,b` → ("", b).
fn break_args(s: &str) -> (&str, &str) {
    match s.split_once(',') {
        Some((a, b)) => (a, b),
        None => (s, s),
    }
}

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let split = argv.iter().position(|a| a == "--");
    let (global, test) = match split {
        Some(i) => (&argv[..i], &argv[i + 1..]),
        None => (argv, &[][..]),
    };
    let g = getopt(BENCH, global, GLOBAL, Style::default())?;
    let mut n = Netperf {
        length: TestLength::Seconds(10),
        host: "localhost".into(),
        local_cpu: None,
        remote_cpu: None,
        request_size: 1,
        response_size: 1,
        nodelay: false,
        banner: true,
        verbosity: 1,
        clients: 1,
    };
    let mut test_name = "TCP_STREAM".to_owned();
    for f in &g.opts {
        match f.key {
            "t" => test_name = f.val().to_ascii_uppercase(),
            "l" => {
                let v = int(BENCH, &f.flag, f.val())?;
                n.length = match v {
                    0 => return usage(BENCH, "-l 0: a test length of zero runs nothing"),
                    v if v > 0 => TestLength::Seconds(v.min(i64::from(u32::MAX)) as u32),
                    v => TestLength::Transactions(v.unsigned_abs()),
                };
            }
            "H" => {
                let host = f.val().split(',').next().unwrap_or("");
                if !matches!(host, "localhost" | "127.0.0.1") {
                    return not_modelled(BENCH, &format!("-H {host}"), "remote host", "only loopback is simulated");
                }
                n.host = host.to_owned();
            }
            "T" => {
                let (l, r) = break_args(f.val());
                let cpu = |s: &str| -> Result<Option<u32>, WorkloadError> {
                    if s.is_empty() {
                        return Ok(None);
                    }
                    let v = int(BENCH, &f.flag, s)?;
                    if !(0..=i64::from(u32::MAX)).contains(&v) {
                        return usage(BENCH, format!("{}: CPU `{s}` is negative", f.flag));
                    }
                    Ok(Some(v as u32))
                };
                n.local_cpu = cpu(l)?;
                n.remote_cpu = cpu(r)?;
            }
            "P" => n.banner = int(BENCH, &f.flag, f.val())? != 0,
            "v" => {
                let v = int(BENCH, &f.flag, f.val())?;
                if !(0..=1).contains(&v) {
                    return not_modelled(BENCH, &f.flag, "verbosity above 1", "its extra output is not reproduced");
                }
                n.verbosity = v as u32;
            }
            "4" => {}
            "clients" => {
                let v = int(BENCH, &f.flag, f.val())?;
                if !(1..=i64::from(MAX_CLIENTS)).contains(&v) {
                    return usage(BENCH, format!("--clients {v}: give 1..={MAX_CLIENTS} client/server pairs"));
                }
                n.clients = v as u32;
            }
            "i" | "I" => {
                return not_modelled(BENCH, &f.flag, "confidence intervals", "run several seeds instead");
            }
            "c" | "C" => return not_modelled(BENCH, &f.flag, "CPU utilisation", ""),
            "D" => return not_modelled(BENCH, &f.flag, "demo mode interim results", ""),
            "6" => return not_modelled(BENCH, &f.flag, "IPv6", "only IPv4 loopback is simulated"),
            "h" | "V" => return usage(BENCH, format!("{} prints information only", f.flag)),
            _ => return not_modelled(BENCH, &f.flag, "global option", "it does not apply to a simulated TCP_RR"),
        }
    }
    if test_name != "TCP_RR" {
        return not_modelled(BENCH, &format!("-t {test_name}"), "test type", "only TCP_RR is modelled");
    }
    if let Some(op) = g.operands.first() {
        return usage(BENCH, format!("unexpected argument `{op}` (test-specific options follow `--`)"));
    }
    let t = getopt(BENCH, test, TEST, Style::default())?;
    for f in &t.opts {
        match f.key {
            "r" => {
                let (a, b) = break_args(f.val());
                let size = |s: &str| -> Result<u32, WorkloadError> {
                    let v = convert(&f.flag, s)?;
                    if v == 0 || v > 1 << 30 {
                        return usage(BENCH, format!("{} {}: sizes must be in 1..=1073741824", f.flag, f.val()));
                    }
                    Ok(v as u32)
                };
                if !a.is_empty() {
                    n.request_size = size(a)?;
                }
                if !b.is_empty() {
                    n.response_size = size(b)?;
                }
            }
            "D" => n.nodelay = true,
            "h" => return usage(BENCH, "-- -h prints information only"),
            _ => return not_modelled(BENCH, &format!("-- {}", f.flag), "test-specific option", ""),
        }
    }
    if let Some(op) = t.operands.first() {
        return usage(BENCH, format!("unexpected test-specific argument `{op}`"));
    }

    // Pair k: sockets 2k (client to server) and 2k+1, processes with their own mm each.
    let objects = vec![ObjectSpec::TcpLoopback { sndbuf: SOCKET_SEND }; 2 * n.clients as usize];
    let count = match n.length {
        TestLength::Seconds(_) => None,
        TestLength::Transactions(t) => Some(t),
    };
    let (req, resp) = (n.request_size, n.response_size);
    let mut tasks = Vec::with_capacity(2 * n.clients as usize);
    for k in 0..n.clients {
        let (c2s, s2c, id) = (2 * k, 2 * k + 1, COUNT_TXN + k as u16);
        let mut client = Prog::new();
        client.op(Op::Mark { id: MARK_START });
        client.repeat_or_forever(count, &|p| {
            p.op(Op::Write { obj: c2s, bytes: req })
                .op(Op::Read { obj: s2c, bytes: resp, exact: true })
                .op(Op::Count { id });
        });
        let mut client = client.task("netperf", 2 * k, false);
        client.cpus = n.local_cpu.map(|c| vec![c]);
        let mut server = Prog::new();
        server.repeat_or_forever(count, &|p| {
            p.op(Op::Read { obj: c2s, bytes: req, exact: true }).op(Op::Write { obj: s2c, bytes: resp });
        });
        let mut server = server.task("netserver", 2 * k + 1, false);
        server.cpus = n.remote_cpu.map(|c| vec![c]);
        tasks.extend([client, server]);
    }
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: match n.length {
            TestLength::Seconds(s) => Some(u64::from(s) * 1_000_000_000),
            TestLength::Transactions(_) => None,
        },
        metric: MetricSpec { name: "transactions_per_sec", better: Better::Higher },
        params: BenchParams::Netperf(n),
    })
}

impl Netperf {
    fn elapsed_s(&self, v: &View) -> Option<f64> {
        v.since(MARK_START).map(|ns| ns as f64 / 1e9)
    }

    /// Transactions of all pairs.
    fn transactions(&self, v: &View) -> u64 {
        (0..self.clients).map(|k| v.count(COUNT_TXN + k as u16)).sum()
    }

    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        match self.elapsed_s(v) {
            Some(s) if s > 0.0 => self.transactions(v) as f64 / s,
            _ => f64::NAN,
        }
    }

    /// The omni TCP_RR output (`send_tcp_rr` formats), once per client.
    pub(crate) fn format_output(&self, v: &View) -> String {
        (0..self.clients).map(|k| self.format_one(v, v.count(COUNT_TXN + k as u16))).collect()
    }

    fn format_one(&self, v: &View, transactions: u64) -> String {
        let elapsed = self.elapsed_s(v).unwrap_or(0.0);
        let rate = if elapsed > 0.0 { transactions as f64 / elapsed } else { 0.0 };
        if self.verbosity == 0 {
            return format!("{rate:7.2}\n");
        }
        let mut s = String::new();
        if self.banner {
            // The parenthesised address is empty when its text ("127.0.0.1") is longer than
            // 7 characters: netperf passes the size of a pointer as the buffer length.
            s += &format!(
                "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to {} () port 0 AF_INET{}{}{}\n",
                self.host,
                if self.nodelay { " : nodelay" } else { "" },
                " : first burst 0",
                if self.local_cpu.is_some() || self.remote_cpu.is_some() { " : cpu bind" } else { "" },
            );
            s += "Local /Remote\n\
                  Socket Size   Request  Resp.   Elapsed  Trans.\n\
                  Send   Recv   Size     Size    Time     Rate         \n\
                  bytes  Bytes  bytes    bytes   secs.    per sec   \n\n";
        }
        s += &format!(
            "{:<6} {:<6} {:<6}   {:<6}  {:<6.2}   {:7.2}   \n",
            SOCKET_SEND, SOCKET_RECV, self.request_size, self.response_size, elapsed, rate
        );
        s += &format!("{SOCKET_SEND:<6} {SOCKET_RECV:<6}\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn clients_make_independent_pairs() {
        let b = parse(&argv("--clients 3 -t TCP_RR -l 1")).unwrap();
        assert_eq!((b.tasks.len(), b.objects.len()), (6, 6));
        // Each pair has its own address spaces and its own sockets.
        let mms: Vec<u32> = b.tasks.iter().map(|t| t.mm).collect();
        assert_eq!(mms, [0, 1, 2, 3, 4, 5]);
        let writes = |t: &sim::program::TaskSpec| -> Vec<u32> {
            t.ops.iter().filter_map(|op| if let Op::Write { obj, .. } = op { Some(*obj) } else { None }).collect()
        };
        assert_eq!(writes(&b.tasks[4]), [4]);
        assert_eq!(writes(&b.tasks[5]), [5]);
        let BenchParams::Netperf(n) = b.params else { panic!("netperf params") };
        assert_eq!(n.clients, 3);
        for bad in ["--clients 0 -t TCP_RR", "--clients 513 -t TCP_RR", "--clients x -t TCP_RR"] {
            assert!(parse(&argv(bad)).is_err(), "{bad}");
        }
    }
}
