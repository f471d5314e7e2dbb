//! `schedlab report`: a self-contained HTML report from `run --json` files or a results
//! database, checked as text and rendered by a real browser (headless Chromium, which .ci/run
//! installs).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().expect("run schedlab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn run_json(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let mut all = vec!["run", "--json"];
    all.extend_from_slice(args);
    let o = schedlab(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let path = dir.join(name);
    std::fs::write(&path, &o.stdout).unwrap();
    path
}

fn report(args: &[&str]) -> String {
    let o = schedlab(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = args[args.iter().position(|a| *a == "-o").unwrap() + 1];
    std::fs::read_to_string(out).unwrap()
}

/// Checks shared by every report: structure, charts with text, nothing external.
fn check_page(html: &str, names: &[&str]) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(html.contains("<table class=\"comparison\">"), "no comparison table");
    for n in names {
        assert!(html.contains(&format!("{n} median")), "no column for {n}");
    }
    let svgs = html.matches("<svg").count();
    assert!(svgs >= 2, "{svgs} charts");
    assert_eq!(svgs, html.matches("</svg>").count());
    // Charts carry text labels (axis descriptions, captions, tick labels).
    assert!(html.matches("<text").count() > 20, "charts without text");
    assert!(html.contains("fraction of wakeups ≤ x"));
    assert!(html.contains("wakeup latency (µs, log scale)"));
    assert!(html.contains(">\nCPU 0\n</text>"), "timeline without CPU labels");
    // Self-contained: no script, no stylesheet or image from elsewhere.
    for bad in ["<script", "<link", "<img", "src=", "@import", "url("] {
        assert!(!html.contains(bad), "the page has `{bad}`");
    }
    let http = html.matches("http://").count() + html.matches("https://").count();
    assert_eq!(http, html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(), "only SVG namespaces may be URLs");
}

#[test]
fn report_from_two_run_json_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_json(dir.path(), "base.json", &["hackbench", "-g", "2", "-l", "200"]);
    let b = run_json(dir.path(), "nb.json", &["--features", "NEXT_BUDDY", "hackbench", "-g", "2", "-l", "200"]);
    let out = dir.path().join("report.html");
    let args = ["report", a.to_str().unwrap(), b.to_str().unwrap(), "-o", out.to_str().unwrap()];
    let html = report(&args);
    check_page(&html, &["v7.3", "v7.3 NEXT_BUDDY"]);
    // Bars, CDF, and a timeline for each variant.
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.contains("hackbench -g 2 -l 200"));
    assert!(
        html.contains(
            "schedlab run --seed 1 --topology smp:2 --kernel v7.3 --features NEXT_BUDDY hackbench -g 2 -l 200"
        )
    );
    // The same inputs give the same bytes.
    assert_eq!(report(&args), html);
    assert!(html.contains("; variants: <b>v7.3 NEXT_BUDDY</b>."), "two variants are listed");

    // One file: the page says there is one variant instead of an empty list.
    let one = dir.path().join("one.html");
    let html = report(&["report", a.to_str().unwrap(), "-o", one.to_str().unwrap()]);
    assert!(html.contains("one variant only, so there is nothing to compare it with."), "one variant");
    assert!(!html.contains("variants: ."));
    assert!(html.contains("<title>schedlab report: v7.3</title>"));
}

#[test]
fn report_from_a_sweep_database() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "topologies = [\"smp:2\"]\nseeds = 3\nduration = 0.2\nworkloads = [\"hackbench -g 2 -l 100\", \"pipe -l 5000\"]\n\
         [[variant]]\nname = \"base\"\nspec = \"v7.3\"\n[[variant]]\nname = \"next-buddy\"\nspec = \"NEXT_BUDDY\"\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let o = schedlab(&["sweep", plan.to_str().unwrap(), "--out", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("report.html");
    let html = report(&["report", results.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    check_page(&html, &["base", "next-buddy"]);
    // Two workloads: bars and a CDF each, and two timelines.
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(html.contains("n=3"));
    assert!(html.contains("95% confidence interval"));
    assert!(html.contains("schedlab compare --topology smp:2 --seed 1 --runs 3"));
    // The database file itself works too.
    let html2 = report(&["report", results.join("results.db").to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(html2.matches("<svg").count(), 6);

    // A real browser renders it: headless Chromium, a screenshot that is not blank.
    let png = dir.path().join("report.png");
    screenshot(&out, &png, dir.path());
    let (w, h, distinct, non_white) = png_stats(&png);
    assert_eq!((w, h), (1200, 2000));
    assert!(distinct >= 64, "only {distinct} colours: the page did not render");
    assert!(non_white > 0.03, "only {:.1}% non-white pixels", non_white * 100.0);
}

#[test]
fn bad_input_is_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let o = schedlab(&["report", "no/such/results", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"kernel\": \"v7.3\"}").unwrap();
    let o = schedlab(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.json") && stderr(&o).contains("patches"), "{}", stderr(&o));
    std::fs::write(&bad, "not json").unwrap();
    let o = schedlab(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 1"), "{}", stderr(&o));
}

const CHROMIUM: &str = "/usr/bin/chromium";

/// Renders `html` to `png` at 1200x2000 with headless Chromium.
fn screenshot(html: &Path, png: &Path, tmp: &Path) {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's chromium package (.ci/run does: apt-get install -y chromium)"
    );
    let profile = tmp.join("chromium-profile");
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,2000",
            &format!("file://{}", html.canonicalize().unwrap().display()),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(png.is_file(), "chromium wrote no screenshot");
}

/// Width, height, number of distinct colours and the fraction of pixels that are not white.
fn png_stats(path: &Path) -> (u32, u32, usize, f64) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let bpp = info.color_type.samples();
    let mut colours = std::collections::BTreeSet::new();
    let mut non_white = 0usize;
    let pixels = (info.width * info.height) as usize;
    for row in buf[..info.line_size * info.height as usize].chunks(info.line_size) {
        for px in row[..info.width as usize * bpp].chunks(bpp) {
            let rgb = if bpp >= 3 { [px[0], px[1], px[2]] } else { [px[0]; 3] };
            colours.insert(rgb);
            if rgb.iter().any(|&c| c < 245) {
                non_white += 1;
            }
        }
    }
    (info.width, info.height, colours.len(), non_white as f64 / pixels as f64)
}
