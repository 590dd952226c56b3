//! README's secured quickstart, run as written: its `cargo run --release -- ...` lines (with
//! the built binary) in a fresh directory, then its kcat lines against the SASL_SSL listener.
//! Only the ports change (the test binds port 0), and the kcat lines also run as a user without
//! ACLs and with a wrong password, which must fail.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::serve::{client, which};

/// The shell lines of README's fenced blocks between the secured-quickstart sentence and the
/// next prose paragraph.
fn readme_secured_blocks() -> (Vec<String>, Vec<String>) {
    let readme = include_str!("../../../../README.md");
    let start = readme.find("A secured broker").expect("README has the secured quickstart");
    let section = &readme[start..];
    let end = section.find("Without a broker").expect("the section ends");
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut inside = false;
    for line in section[..end].lines() {
        if line.starts_with("```") {
            inside = !inside;
            if inside {
                blocks.push(Vec::new());
            }
            continue;
        }
        if inside && let Some(block) = blocks.last_mut() {
            let command = line.split("  #").next().unwrap_or(line).trim().to_owned();
            if !command.is_empty() {
                block.push(command);
            }
        }
    }
    assert_eq!(blocks.len(), 2, "two blocks: the broker side and the client side");
    (blocks[0].clone(), blocks[1].clone())
}

/// Kills the broker when the test ends, also when an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn seglog_args(line: &str) -> Vec<String> {
    let rest = line.strip_prefix("cargo run --release -- ").expect("a seglog command");
    rest.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn the_secured_quickstart_works_as_written() {
    let Some(_kcat) = client("kcat", which("kcat")) else { return };
    let (broker_lines, client_lines) = readme_secured_blocks();
    let work = tempfile::tempdir().expect("tempdir");
    let seglog = env!("CARGO_BIN_EXE_seglog");
    let (setup, serve) = broker_lines.split_at(broker_lines.len() - 1);
    for line in setup {
        let output = Command::new(seglog)
            .args(seglog_args(line))
            .current_dir(work.path())
            .output()
            .expect("seglog runs");
        assert!(output.status.success(), "{line}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let mut serve_args = seglog_args(&serve[0]);
    assert_eq!(serve_args[..2], ["serve".to_owned(), "--config".to_owned()]);
    serve_args.extend(
        [
            "--override",
            "listeners=SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "--metrics-listener",
            "",
            "--console-listener",
            "",
        ]
        .map(str::to_owned),
    );
    let mut child = Command::new(seglog)
        .args(&serve_args)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let _broker = KillOnDrop(child);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let sasl_ssl = loop {
        let line =
            receiver.recv_timeout(Duration::from_mins(1)).expect("serve announces listeners");
        if let Some(addr) = line.strip_prefix("seglog: listener SASL_SSL on ") {
            break addr.trim().to_owned();
        }
    };
    // README: `K="kcat ..."`, then `seq 1 10 | $K -P -t demo` and `$K -C -t demo -e`.
    let kcat_line =
        client_lines[0].strip_prefix("K=\"").and_then(|l| l.strip_suffix('"')).expect("K=");
    let kcat_args: Vec<String> = kcat_line
        .replace("127.0.0.1:9094", &sasl_ssl)
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect();
    let run = |extra: &[&str], args: &[String], input: &str| {
        // Cargo points LD_LIBRARY_PATH at the rdkafka crate's own librdkafka, built without
        // OpenSSL; kcat must load the system's.
        let mut kcat = Command::new("kcat")
            .env_remove("LD_LIBRARY_PATH")
            .args(args)
            .args(extra)
            .current_dir(work.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kcat runs");
        kcat.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
        kcat.wait_with_output().expect("kcat ends")
    };
    assert_eq!(client_lines[1], "seq 1 10 | $K -P -t demo");
    assert_eq!(client_lines[2], "$K -C -t demo -e");
    let numbers: String = (1..=10).map(|i| i.to_string() + "\n").collect();
    let produced = run(&["-P", "-t", "demo"], &kcat_args, &numbers);
    assert!(produced.status.success(), "{}", String::from_utf8_lossy(&produced.stderr));
    let consumed = run(&["-C", "-t", "demo", "-e"], &kcat_args, "");
    assert!(consumed.status.success(), "{}", String::from_utf8_lossy(&consumed.stderr));
    assert_eq!(String::from_utf8_lossy(&consumed.stdout), numbers);
    // A wrong password is refused.
    let wrong: Vec<String> = kcat_args
        .iter()
        .map(|a| a.replace("sasl.password=alice-secret", "sasl.password=nope"))
        .collect();
    let refused = run(&["-L"], &wrong, "");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
