//! The reading tools: text with line ranges and a size cap, media,
//! several files at once, file information, the allowed directories.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;
use cap_std::fs::File;
use mcp_schema::{ContentBlock, ResourceContents};
use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::State;
use super::roots::Access;
use super::scope::{AccessError, Located};
use super::tools::{PathArgs, Reply, Spec, blocking, reads, schema_of};

/// Opens a file for reading through its directory's handle, after the
/// containment and deny checks.
pub(crate) fn open_file(state: &Access, path: &str) -> Result<(Located, File), AccessError> {
    let located = state.locate(path)?;
    let file = state
        .scope
        .dir(located.root)
        .open(located.handle_path())
        .map_err(|e| AccessError::io(path, e))?;
    let metadata = file.metadata().map_err(|e| AccessError::io(path, e))?;
    if metadata.is_dir() {
        return Err(AccessError::Io {
            path: path.to_owned(),
            message: "is a directory; use list_directory or directory_tree".to_owned(),
        });
    }
    Ok((located, file))
}

/// Which lines to read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lines {
    /// From line `offset` (1-based), at most `limit` lines.
    Range { offset: u64, limit: Option<u64> },
    /// The last `n` lines.
    Tail(u64),
}

/// Lines read from a file.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TextRead {
    /// The text read.
    pub content: String,
    /// The first line returned (1-based; 0 when nothing was).
    pub start_line: u64,
    /// The last line returned.
    pub end_line: u64,
    /// Whether the size cap cut the read short.
    pub truncated: bool,
    /// The `offset` that continues a truncated read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

impl TextRead {
    /// The text with, when truncated, a notice saying where to continue.
    pub fn text(&self, max_bytes: usize) -> String {
        if !self.truncated {
            return self.content.clone();
        }
        let mut text = self.content.clone();
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "\n[truncated at {max_bytes} bytes: lines {}-{} shown",
            self.start_line, self.end_line
        ));
        match self.next_offset {
            Some(next) => text.push_str(&format!("; continue with offset={next}]")),
            None => text.push_str("; use offset and limit to read earlier lines]"),
        }
        text
    }
}

/// Cuts `line` to at most `max` bytes on a character boundary.
fn cut(line: &mut String, max: usize) {
    let mut end = max.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line.truncate(end);
}

/// Reads `lines` of `reader`, returning at most `max_bytes` of text.
pub(crate) fn read_lines(
    reader: impl Read,
    lines: Lines,
    max_bytes: usize,
) -> std::io::Result<TextRead> {
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    let mut next_line = |reader: &mut BufReader<_>| -> std::io::Result<Option<String>> {
        buffer.clear();
        // A line is read whole but never kept beyond the cap (plus one
        // line): the reader is bounded by `take` per line.
        let read = reader
            .by_ref()
            .take(max_bytes as u64 + 1)
            .read_until(b'\n', &mut buffer)?;
        if read == 0 {
            return Ok(None);
        }
        if buffer.last() != Some(&b'\n') && read as u64 > max_bytes as u64 {
            // Skip the rest of an overlong line.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let n = reader
                    .by_ref()
                    .take(64 * 1024)
                    .read_until(b'\n', &mut rest)?;
                if n == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
            }
        }
        Ok(Some(String::from_utf8_lossy(&buffer).into_owned()))
    };
    match lines {
        Lines::Range { offset, limit } => {
            let offset = offset.max(1);
            let mut number = 0u64;
            let mut content = String::new();
            let mut end_line = 0;
            let mut truncated = false;
            let mut next_offset = None;
            while let Some(mut line) = next_line(&mut reader)? {
                number += 1;
                if number < offset {
                    continue;
                }
                if limit.is_some_and(|limit| number >= offset + limit) {
                    break;
                }
                if content.len() + line.len() > max_bytes {
                    truncated = true;
                    if content.is_empty() {
                        cut(&mut line, max_bytes);
                        content.push_str(&line);
                        end_line = number;
                        next_offset = Some(number + 1);
                    } else {
                        next_offset = Some(number);
                    }
                    break;
                }
                content.push_str(&line);
                end_line = number;
            }
            Ok(TextRead {
                content,
                start_line: if end_line == 0 { 0 } else { offset },
                end_line,
                truncated,
                next_offset,
            })
        }
        Lines::Tail(count) => {
            let mut kept: VecDeque<String> = VecDeque::new();
            let mut bytes = 0usize;
            let mut number = 0u64;
            let mut truncated = false;
            while let Some(line) = next_line(&mut reader)? {
                number += 1;
                bytes += line.len();
                kept.push_back(line);
                if kept.len() as u64 > count
                    && let Some(dropped) = kept.pop_front()
                {
                    bytes -= dropped.len();
                }
                while bytes > max_bytes && kept.len() > 1 {
                    if let Some(dropped) = kept.pop_front() {
                        bytes -= dropped.len();
                        truncated = true;
                    }
                }
            }
            let mut content: String = kept.iter().map(String::as_str).collect();
            if content.len() > max_bytes {
                cut(&mut content, max_bytes);
                truncated = true;
            }
            let shown = kept.len() as u64;
            Ok(TextRead {
                content,
                start_line: if shown == 0 { 0 } else { number - shown + 1 },
                end_line: number,
                truncated,
                next_offset: None,
            })
        }
    }
}

/// Arguments of `read_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReadTextArgs {
    /// The file: absolute, or relative to the first allowed directory.
    path: String,
    /// Only the first N lines.
    #[serde(default)]
    head: Option<u64>,
    /// Only the last N lines.
    #[serde(default)]
    tail: Option<u64>,
    /// The first line to return (1-based).
    #[serde(default)]
    offset: Option<u64>,
    /// How many lines to return from `offset`.
    #[serde(default)]
    limit: Option<u64>,
}

fn read_text(args: ReadTextArgs, state: &Access) -> Result<Reply, AccessError> {
    let lines = match (args.head, args.tail, args.offset, args.limit) {
        (Some(_), Some(_), _, _) => {
            return Err(AccessError::Invalid(
                "give head or tail, not both".to_owned(),
            ));
        }
        (_, Some(_), Some(_), _) | (_, Some(_), _, Some(_)) => {
            return Err(AccessError::Invalid(
                "tail reads the end of the file; it does not combine with offset or limit"
                    .to_owned(),
            ));
        }
        (_, Some(tail), _, _) => Lines::Tail(tail),
        (Some(head), None, offset, limit) => Lines::Range {
            offset: offset.unwrap_or(1),
            limit: Some(limit.map_or(head, |l| l.min(head))),
        },
        (None, None, offset, limit) => Lines::Range {
            offset: offset.unwrap_or(1),
            limit,
        },
    };
    let (_, file) = open_file(state, &args.path)?;
    let max = state.limits.max_read_bytes;
    let read = read_lines(file, lines, max).map_err(|e| AccessError::io(&args.path, e))?;
    Ok(Reply::with(read.text(max), &read))
}

/// The whole of a file up to `max` bytes, refused beyond.
pub(crate) fn read_whole(state: &Access, path: &str) -> Result<(Located, Vec<u8>), AccessError> {
    let (located, file) = open_file(state, path)?;
    let max = state.limits.max_file_bytes;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AccessError::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(AccessError::Io {
            path: path.to_owned(),
            message: format!(
                "is larger than {max} bytes, the most read whole; read it as text with offset and limit"
            ),
        });
    }
    Ok((located, bytes))
}

/// The MIME type of a file name, from its extension.
pub(crate) fn mime_of(path: &std::path::Path) -> String {
    mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream")
        .to_owned()
}

fn read_media(args: PathArgs, state: &Access) -> Result<Reply, AccessError> {
    let (located, bytes) = read_whole(state, &args.path)?;
    let mime = mime_of(&located.relative);
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let block = if mime.starts_with("image/") {
        ContentBlock::image(data, mime)
    } else if mime.starts_with("audio/") {
        ContentBlock::audio(data, mime)
    } else {
        let uri = super::uri::file_uri(&state.scope.display(&located));
        ContentBlock::embedded(ResourceContents::blob(uri, Some(mime), data))
    };
    Ok(Reply {
        content: vec![block],
        structured: None,
    })
}

/// Arguments of `read_multiple_files`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReadManyArgs {
    /// The files; each absolute or relative to the first allowed directory.
    #[schemars(length(min = 1, max = 100))]
    paths: Vec<String>,
}

/// One file of `read_multiple_files`.
#[derive(Debug, Serialize, JsonSchema)]
struct FileRead {
    /// The path as given.
    path: String,
    /// Its text, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// Whether the size cap cut the text short.
    truncated: bool,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The result of `read_multiple_files`.
#[derive(Debug, Serialize, JsonSchema)]
struct ReadMany {
    /// Each file, in the order asked.
    files: Vec<FileRead>,
}

fn read_many(args: ReadManyArgs, state: &Access) -> Result<Reply, AccessError> {
    // The files share four times the cap of one read, each at least 4 KiB.
    let max = (state.limits.max_read_bytes.saturating_mul(4) / args.paths.len().max(1)).clamp(
        4096.min(state.limits.max_read_bytes),
        state.limits.max_read_bytes,
    );
    let mut parts = Vec::with_capacity(args.paths.len());
    let mut files = Vec::with_capacity(args.paths.len());
    for path in args.paths {
        let read = open_file(state, &path).and_then(|(_, file)| {
            read_lines(
                file,
                Lines::Range {
                    offset: 1,
                    limit: None,
                },
                max,
            )
            .map_err(|e| AccessError::io(&path, e))
        });
        match read {
            Ok(read) => {
                parts.push(format!("{path}:\n{}\n", read.text(max)));
                files.push(FileRead {
                    path,
                    truncated: read.truncated,
                    content: Some(read.content),
                    error: None,
                });
            }
            Err(e) => {
                parts.push(format!("{path}: Error - {e}"));
                files.push(FileRead {
                    path,
                    content: None,
                    truncated: false,
                    error: Some(e.to_string()),
                });
            }
        }
    }
    Ok(Reply::with(parts.join("\n---\n"), &ReadMany { files }))
}

/// What `get_file_info` tells.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FileInfo {
    /// The absolute path.
    path: String,
    /// Size in bytes.
    size: u64,
    /// When it was created (HTTP date), where the system records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    /// When it was last modified.
    #[serde(skip_serializing_if = "Option::is_none")]
    modified: Option<String>,
    /// When it was last read.
    #[serde(skip_serializing_if = "Option::is_none")]
    accessed: Option<String>,
    /// Whether it is a directory.
    is_directory: bool,
    /// Whether it is a regular file.
    is_file: bool,
    /// Whether the path itself is a symbolic link.
    is_symlink: bool,
    /// Permission bits, in octal (`644`).
    permissions: String,
}

fn date(time: std::io::Result<SystemTime>) -> Option<String> {
    time.ok().map(httpdate::fmt_http_date)
}

fn file_info(args: PathArgs, state: &Access) -> Result<Reply, AccessError> {
    let located = state.locate(&args.path)?;
    let dir = state.scope.dir(located.root);
    let metadata = dir
        .metadata(located.handle_path())
        .map_err(|e| AccessError::io(&args.path, e))?;
    let is_symlink = dir
        .symlink_metadata(located.handle_path())
        .is_ok_and(|m| m.file_type().is_symlink());
    #[cfg(unix)]
    let permissions = {
        use cap_std::fs::PermissionsExt as _;
        format!("{:o}", metadata.permissions().mode() & 0o777)
    };
    #[cfg(not(unix))]
    let permissions = if metadata.permissions().readonly() {
        "read-only".to_owned()
    } else {
        "read-write".to_owned()
    };
    let info = FileInfo {
        path: state.scope.display(&located).display().to_string(),
        size: metadata.len(),
        created: date(metadata.created().map(|t| t.into_std())),
        modified: date(metadata.modified().map(|t| t.into_std())),
        accessed: date(metadata.accessed().map(|t| t.into_std())),
        is_directory: metadata.is_dir(),
        is_file: metadata.is_file(),
        is_symlink,
        permissions,
    };
    let mut text = format!("size: {}\n", info.size);
    for (key, value) in [
        ("created", &info.created),
        ("modified", &info.modified),
        ("accessed", &info.accessed),
    ] {
        if let Some(value) = value {
            text.push_str(&format!("{key}: {value}\n"));
        }
    }
    text.push_str(&format!(
        "isDirectory: {}\nisFile: {}\npermissions: {}",
        info.is_directory, info.is_file, info.permissions
    ));
    Ok(Reply::with(text, &info))
}

/// The result of `list_allowed_directories`.
#[derive(Debug, Serialize, JsonSchema)]
struct AllowedDirectories {
    /// Absolute paths; everything beneath them is in scope.
    directories: Vec<String>,
}

fn allowed(_: mcp_server::NoArguments, state: &Access) -> Result<Reply, AccessError> {
    let directories: Vec<String> = state
        .directories()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let text = format!("Allowed directories:\n{}", directories.join("\n"));
    Ok(Reply::with(text, &AllowedDirectories { directories }))
}

const READ_TEXT: &str = "Read a file as text (any extension). Use head or tail for the first or \
last N lines, or offset (1-based line) and limit for a range. Long reads are cut at a size cap; \
the reply then says so and gives the offset to continue from. Only within the allowed directories.";

/// The reading tools.
pub(crate) fn tools(state: &Arc<State>) -> Vec<ToolDef> {
    vec![
        blocking(
            Spec {
                name: "read_text_file",
                title: "Read Text File",
                description: READ_TEXT,
                annotations: reads(),
                output: Some(schema_of::<TextRead>()),
            },
            state,
            read_text,
        ),
        blocking(
            Spec {
                name: "read_file",
                title: "Read File (Deprecated)",
                description: "Read a file as text. DEPRECATED: use read_text_file, which this is the same as.",
                annotations: reads(),
                output: Some(schema_of::<TextRead>()),
            },
            state,
            read_text,
        ),
        blocking(
            Spec {
                name: "read_media_file",
                title: "Read Media File",
                description: "Read an image or audio file: base64 data with its MIME type (other \
files as an embedded binary resource). Only within the allowed directories.",
                annotations: reads(),
                output: None,
            },
            state,
            read_media,
        ),
        blocking(
            Spec {
                name: "read_multiple_files",
                title: "Read Multiple Files",
                description: "Read several files at once; each comes with its path, and a file \
that cannot be read does not stop the others. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<ReadMany>()),
            },
            state,
            read_many,
        ),
        blocking(
            Spec {
                name: "get_file_info",
                title: "Get File Info",
                description: "Size, times, type and permissions of a file or directory, without \
reading it. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<FileInfo>()),
            },
            state,
            file_info,
        ),
        blocking(
            Spec {
                name: "list_allowed_directories",
                title: "List Allowed Directories",
                description: "The directories this server may access; everything beneath them \
is accessible too.",
                annotations: reads(),
                output: Some(schema_of::<AllowedDirectories>()),
            },
            state,
            allowed,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str, offset: u64, limit: Option<u64>, max: usize) -> TextRead {
        read_lines(text.as_bytes(), Lines::Range { offset, limit }, max).unwrap()
    }

    #[test]
    fn a_range_reads_the_lines_asked() {
        let read = range("a\nb\nc\nd\n", 2, Some(2), 100);
        assert_eq!(read.content, "b\nc\n");
        assert_eq!(
            (read.start_line, read.end_line, read.truncated),
            (2, 3, false)
        );
    }

    #[test]
    fn a_capped_read_says_where_to_continue() {
        let read = range("aaaa\nbbbb\ncccc\n", 1, None, 12);
        assert_eq!(read.content, "aaaa\nbbbb\n");
        assert!(read.truncated);
        assert_eq!(read.next_offset, Some(3));
        assert!(
            read.text(12).contains("continue with offset=3"),
            "{}",
            read.text(12)
        );
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let read = read_lines("1\n2\n3\n4\n".as_bytes(), Lines::Tail(2), 100).unwrap();
        assert_eq!(read.content, "3\n4\n");
        assert_eq!((read.start_line, read.end_line), (3, 4));
    }

    #[test]
    fn an_overlong_first_line_is_cut_on_a_character_boundary() {
        let read = range("ééééé\nx\n", 1, None, 3);
        assert_eq!(read.content, "é");
        assert!(read.truncated);
        assert_eq!(read.next_offset, Some(2));
    }
}
