//! The Graphviz driver: renders the DOT that `tooldec draw` writes to SVG
//! with the `dot` program, stopping it after [`DOT_SECONDS`]. The view
//! code only produces DOT text; running a program is the command line's
//! job.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tooldec_compiler::{Error, ErrorKind};

/// How long [`svg`] lets `dot` run.
pub const DOT_SECONDS: u64 = 120;

/// Renders DOT to SVG with the `dot` program; Ok(None) when `dot` is not installed (not on PATH); an Error when it is installed and fails (with its stderr).
pub fn svg(dot: &str) -> Result<Option<String>, Error> {
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(ErrorKind::Io, format!("cannot run `dot`: {e}"))),
    };
    let Some(mut stdin) = child.stdin.take() else {
        return Err(Error::new(ErrorKind::Io, "cannot write to `dot`"));
    };
    let input = dot.as_bytes().to_vec();
    // Written and read from other threads: `dot` may fill its output pipe
    // before it has read all of its input.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let deadline = Instant::now() + Duration::from_secs(DOT_SECONDS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::new(
                    ErrorKind::Limit,
                    format!(
                        "`dot -Tsvg` did not finish in {DOT_SECONDS} s: the graph is too large to lay \
                         out; draw less of it"
                    ),
                ));
            }
            Err(e) => return Err(Error::new(ErrorKind::Io, format!("`dot -Tsvg`: {e}"))),
        }
    };
    let written = writer.join();
    let out_bytes = stdout.join().unwrap_or_default();
    let err_bytes = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "`dot -Tsvg` failed ({status}): {}",
                String::from_utf8_lossy(&err_bytes).trim()
            ),
        ));
    }
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Error::new(ErrorKind::Io, format!("writing to `dot`: {e}"))),
        Err(_) => return Err(Error::new(ErrorKind::Io, "writing to `dot` failed")),
    }
    String::from_utf8(out_bytes)
        .map(Some)
        .map_err(|_| Error::new(ErrorKind::Io, "`dot -Tsvg` wrote output that is not UTF-8"))
}
