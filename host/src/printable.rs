//! Text from templates, state and AWS made safe to print on a terminal.
//!
//! A resource name, an AWS error message or a tag value can hold escape sequences that move the
//! cursor, rewrite earlier lines, set the window title or write the clipboard (OSC 52) when
//! printed as is. Every line cdkd prints goes through [`printable`]: colour sequences
//! (`ESC [ … m`, which cdkd's own output uses, but not "conceal") pass, every other C0 control
//! character is shown escaped (`\u{1b}`), line breaks and tabs stay. DEL and the C1 range are
//! left as they are: JSON output carries them raw (a JSON parser rejects `\u{7f}`), a
//! terminal ignores DEL, and UTF-8 terminals do not act on C1 characters.

use std::borrow::Cow;
use std::io::Write;

/// `text` with every control character but line breaks, tabs and colour sequences escaped.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' {
            if let Some(colour) = colour_sequence(rest) {
                out.push_str(colour);
                rest = &rest[colour.len()..];
                continue;
            }
        }
        if is_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// C0 controls, except line feed and tab.
fn is_control(c: char) -> bool {
    c.is_ascii_control() && c != '\u{7f}' && c != '\n' && c != '\t'
}

/// The SGR (colour) sequence `rest` starts with: `ESC [`, digits and semicolons, `m`.
fn colour_sequence(rest: &str) -> Option<&str> {
    let body = rest.strip_prefix("\u{1b}[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    // 8 conceals what follows: text that prints but cannot be read.
    let conceals = body[..end].split(';').any(|p| p == "8" || p == "08");
    (body[end..].starts_with('m') && end <= 32 && !conceals).then(|| &rest[..2 + end + 1])
}

/// Writes one formatted line to stdout through [`printable`]; fails as `println!` does (the
/// CLI's panic hook ends a command whose stdout closed quietly on that message).
pub fn print_out(args: std::fmt::Arguments<'_>, newline: bool) {
    let text = args.to_string();
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(printable(&text).as_bytes())
        .and_then(|()| match newline {
            true => stdout.write_all(b"\n"),
            false => Ok(()),
        });
    if let Err(err) = written {
        panic!("failed printing to stdout: {err}");
    }
}

/// Writes one formatted line to stderr through [`printable`] (errors are ignored, as a closed
/// stderr leaves nothing to report them on).
pub fn print_err(args: std::fmt::Arguments<'_>, newline: bool) {
    let text = args.to_string();
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(printable(&text).as_bytes());
    if newline {
        let _ = stderr.write_all(b"\n");
    }
}

/// A writer (the log's) whose every write goes through [`printable`]; a log event arrives in
/// one write, so a colour sequence is never split.
pub struct PrintableWriter<W>(pub W);

impl<W: Write> Write for PrintableWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(printable(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_control_but_line_breaks_tabs_and_colours() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
        assert_eq!(
            printable("\u{1b}[31mred\u{1b}[0m"),
            "\u{1b}[31mred\u{1b}[0m"
        );
        // Title (OSC), clipboard (OSC 52), cursor up and erase line, a bell, C1 CSI, DEL.
        assert_eq!(
            printable("a\u{1b}]0;pwned\u{7}b"),
            "a\\u{1b}]0;pwned\\u{7}b"
        );
        assert_eq!(
            printable("\u{1b}]52;c;ZXZpbA==\u{1b}\\"),
            "\\u{1b}]52;c;ZXZpbA==\\u{1b}\\"
        );
        assert_eq!(printable("\u{1b}[1A\u{1b}[2K"), "\\u{1b}[1A\\u{1b}[2K");
        assert_eq!(printable("x\u{9b}y\u{7f}\r"), "x\u{9b}y\u{7f}\\u{d}");
        assert_eq!(printable("\u{1b}[8mhidden"), "\\u{1b}[8mhidden");
        assert_eq!(printable("\u{1b}["), "\\u{1b}[");
    }
}
