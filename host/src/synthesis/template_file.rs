//! A CloudFormation template read from a file the user names: JSON or YAML (told apart by
//! the first character), edited as JSON with every intrinsic in its long form, and written
//! back in the format it came in, a YAML template with its short forms (`!Ref`, `!Sub`, ...).
//!
//! YAML is written by hand, not by serde_yaml: serde_yaml cannot write a tag inside a tag's
//! argument, and it leaves strings unquoted that YAML 1.1, which CloudFormation reads, takes
//! for something else (`yes`, `on`, `2010-09-09`, `1_000`, `12:30`, `<<`).

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value};
use serde_yaml::value::TaggedValue;
use serde_yaml::Value as Yaml;

/// A template file that cannot be used, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TemplateFileError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a template cdkd can read.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file is YAML that is not a template (a tag, key or value at a position).
    #[error("{}: {problem}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        problem: YamlProblem,
    },
}

/// What is wrong in a YAML template, at a position (`Resources.B.Properties.Name`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlProblem {
    /// A number that is infinite or NaN.
    #[error("{number} at {at} is not a finite number")]
    NotFinite {
        /// The number, as written.
        number: String,
        /// Where.
        at: String,
    },
    /// A mapping key that is not a scalar.
    #[error("a key at {at} is not a string")]
    KeyNotString {
        /// Where.
        at: String,
    },
    /// A key given twice in one mapping.
    #[error("{key} appears twice at {at}")]
    DuplicateKey {
        /// The key.
        key: String,
        /// Where.
        at: String,
    },
    /// A tag that is not one of CloudFormation's short forms.
    #[error("unknown tag {tag} at {at}; CloudFormation's short forms are !{}", SHORT_FORMS.join(", !"))]
    UnknownTag {
        /// The tag, with its `!`.
        tag: String,
        /// Where.
        at: String,
    },
    /// `!GetAtt` on a scalar without a dot.
    #[error("!GetAtt {text} at {at} is not Resource.Attribute")]
    GetAttWithoutDot {
        /// The tag's argument.
        text: String,
        /// Where.
        at: String,
    },
}

fn invalid(path: &Path, message: impl Into<String>) -> TemplateFileError {
    TemplateFileError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The format a template file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateFormat {
    /// JSON.
    Json,
    /// YAML, possibly with CloudFormation's short-form tags.
    Yaml,
}

/// A template file's body (intrinsics in long form) and the format it was written in.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateFile {
    /// The template, as JSON.
    pub body: Value,
    /// The format of the file.
    pub format: TemplateFormat,
}

impl TemplateFile {
    /// Reads and parses a template file.
    pub fn read(path: &Path) -> Result<TemplateFile, TemplateFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TemplateFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        TemplateFile::parse(&text, path)
    }

    /// Parses a template's text: JSON if it opens with `{`, else YAML; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<TemplateFile, TemplateFileError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let start = text.trim_start();
        if start.is_empty() {
            return Err(invalid(origin, "the template is empty"));
        }
        let (body, format) = if start.starts_with('{') {
            let body = serde_json::from_str(text)
                .map_err(|err| invalid(origin, format!("not valid JSON: {err}")))?;
            (body, TemplateFormat::Json)
        } else {
            let yaml: Yaml = serde_yaml::from_str(text)
                .map_err(|err| invalid(origin, format!("not valid YAML: {err}")))?;
            let body = from_yaml(yaml, Loc::Top).map_err(|problem| TemplateFileError::Yaml {
                path: origin.to_path_buf(),
                problem,
            })?;
            (body, TemplateFormat::Yaml)
        };
        match body {
            Value::Object(_) => Ok(TemplateFile { body, format }),
            Value::Null => Err(invalid(origin, "the template is empty")),
            _ => Err(invalid(
                origin,
                "the template is not a mapping of sections (Resources, ...)",
            )),
        }
    }

    /// `body` written in this file's format.
    pub fn render(&self, body: &Value) -> String {
        self.format.render(body)
    }
}

impl TemplateFormat {
    /// `body` written in this format: pretty JSON, or YAML with short-form intrinsics.
    pub fn render(self, body: &Value) -> String {
        match self {
            TemplateFormat::Json => format!("{body:#}\n"),
            TemplateFormat::Yaml => {
                let mut out = String::new();
                write_root(&mut out, &node(body));
                out
            }
        }
    }
}

/// Short forms AWS documents, read and written: each `!X` stands for `{"Fn::X": ...}`, except
/// `!Ref` and `!Condition`, which drop the `Fn::`.
const SHORT_FORMS: &[&str] = &[
    "Ref",
    "Condition",
    "GetAtt",
    "Base64",
    "Cidr",
    "FindInMap",
    "GetAZs",
    "GetStackOutput",
    "ImportValue",
    "Join",
    "Select",
    "Split",
    "Sub",
    "Transform",
    "And",
    "Equals",
    "If",
    "Not",
    "Or",
];

/// Tags for functions AWS documents no short form of (language extensions, rule functions),
/// read as the AWS CLI reads any tag but written in long form.
const READ_ONLY_SHORT_FORMS: &[&str] = &[
    "Length",
    "ToJsonString",
    "Contains",
    "EachMemberEquals",
    "EachMemberIn",
    "RefAll",
    "ValueOf",
    "ValueOfAll",
];

fn long_form(tag: &str) -> String {
    match tag {
        "Ref" | "Condition" => tag.to_string(),
        _ => format!("Fn::{tag}"),
    }
}

/// The tag written for a long-form key, if it has one.
fn short_form(key: &str) -> Option<&'static str> {
    let tag = match key.strip_prefix("Fn::") {
        Some("Ref" | "Condition") => return None,
        Some(tag) => tag,
        None => key,
    };
    let short = SHORT_FORMS.iter().copied().find(|t| *t == tag)?;
    (long_form(short) == key).then_some(short)
}

/// Where a node is in the template, for error messages.
#[derive(Clone, Copy)]
enum Loc<'a> {
    Top,
    Key(&'a Loc<'a>, &'a str),
    Index(&'a Loc<'a>, usize),
}

impl Loc<'_> {
    fn write_path(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Top => Ok(()),
            Loc::Key(parent, key) => {
                parent.write_path(f)?;
                if !matches!(parent, Loc::Top) {
                    f.write_str(".")?;
                }
                f.write_str(key)
            }
            Loc::Index(parent, index) => {
                parent.write_path(f)?;
                write!(f, "[{index}]")
            }
        }
    }
}

impl fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Top => f.write_str("the top level"),
            _ => self.write_path(f),
        }
    }
}

/// A YAML value as JSON, short forms expanded; the error says what is wrong where.
fn from_yaml(value: Yaml, loc: Loc<'_>) -> Result<Value, YamlProblem> {
    Ok(match value {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                let number = n.as_f64().and_then(Number::from_f64);
                Value::Number(number.ok_or_else(|| YamlProblem::NotFinite {
                    number: n.to_string(),
                    at: loc.to_string(),
                })?)
            }
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| from_yaml(item, Loc::Index(&loc, i)))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Mapping(mapping) => {
            let mut map = Map::with_capacity(mapping.len());
            for (key, value) in mapping {
                let key = match key {
                    Yaml::String(s) => s,
                    // CloudFormation reads a number or boolean key as its text.
                    Yaml::Number(n) => n.to_string(),
                    Yaml::Bool(b) => b.to_string(),
                    _ => {
                        return Err(YamlProblem::KeyNotString {
                            at: loc.to_string(),
                        })
                    }
                };
                let value = from_yaml(value, Loc::Key(&loc, &key))?;
                if map.contains_key(&key) {
                    return Err(YamlProblem::DuplicateKey {
                        key,
                        at: loc.to_string(),
                    });
                }
                map.insert(key, value);
            }
            Value::Object(map)
        }
        Yaml::Tagged(tagged) => {
            let TaggedValue { tag, value } = *tagged;
            let tag = tag.to_string();
            let name = tag.strip_prefix('!').unwrap_or(&tag);
            if !SHORT_FORMS.contains(&name) && !READ_ONLY_SHORT_FORMS.contains(&name) {
                return Err(YamlProblem::UnknownTag {
                    tag,
                    at: loc.to_string(),
                });
            }
            // A tag makes its scalar a string (`!Ref 5` is `{"Ref": "5"}` to YAML 1.1 readers
            // like CloudFormation); serde_yaml has already resolved it, so rebuild the text
            // (exact but for spellings like `1.10`, `~` or `True`).
            let value = match value {
                Yaml::Null => Yaml::String(String::new()),
                Yaml::Bool(b) => Yaml::String(b.to_string()),
                Yaml::Number(n) => Yaml::String(n.to_string()),
                value => value,
            };
            let argument = match (name, value) {
                ("GetAtt", Yaml::String(s)) => {
                    // `!GetAtt Db.Endpoint.Address` names attribute `Endpoint.Address`.
                    let Some((resource, attribute)) = s.split_once('.') else {
                        return Err(YamlProblem::GetAttWithoutDot {
                            text: s,
                            at: loc.to_string(),
                        });
                    };
                    Value::from(vec![resource, attribute])
                }
                (_, value) => from_yaml(value, loc)?,
            };
            let mut map = Map::with_capacity(1);
            map.insert(long_form(name), argument);
            Value::Object(map)
        }
    })
}

/// A JSON value as the YAML node written for it.
enum Node<'a> {
    Null,
    Bool(bool),
    Number(&'a Number),
    Str(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(&'a str, Node<'a>)>),
    Tagged(&'static str, Box<Node<'a>>),
}

impl Node<'_> {
    /// Whether a short form is written anywhere in this node.
    fn holds_tag(&self) -> bool {
        match self {
            Node::Tagged(..) => true,
            Node::Seq(items) => items.iter().any(Node::holds_tag),
            Node::Map(entries) => entries.iter().any(|(_, v)| v.holds_tag()),
            _ => false,
        }
    }
}

fn node(value: &Value) -> Node<'_> {
    match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => Node::Number(n),
        Value::String(s) => Node::Str(Cow::Borrowed(s)),
        Value::Array(items) => Node::Seq(items.iter().map(node).collect()),
        Value::Object(map) => match map.iter().next() {
            Some((key, argument)) if map.len() == 1 => shorten(key, argument, node(argument)),
            _ => Node::Map(map.iter().map(|(k, v)| (k.as_str(), node(v))).collect()),
        },
    }
}

/// `{key: argument}` (`inner` is the argument's node) in short form where it reads back the same.
fn shorten<'a>(key: &'a str, argument: &'a Value, inner: Node<'a>) -> Node<'a> {
    let long = |inner| Node::Map(vec![(key, inner)]);
    let Some(tag) = short_form(key) else {
        return long(inner);
    };
    // A tag's scalar reads back as a string.
    if matches!(argument, Value::Null | Value::Bool(_) | Value::Number(_)) {
        return long(inner);
    }
    let inner = match (tag, argument) {
        ("GetAtt", Value::Array(parts)) => match parts.as_slice() {
            // Read back split at the first dot, so only a resource name without one.
            [Value::String(resource), Value::String(attribute)] if !resource.contains('.') => {
                Node::Str(Cow::Owned(format!("{resource}.{attribute}")))
            }
            _ => inner,
        },
        // A scalar `!GetAtt` would be read back split in two.
        ("GetAtt", _) => return long(inner),
        // Only a condition's name: a `Condition` key holding anything else is not the function.
        ("Condition", Value::String(_)) => inner,
        ("Condition", _) => return long(inner),
        _ => inner,
    };
    // A node takes one tag (`!Base64 !Sub` is not YAML), and AWS documents that a short form's
    // mapping (`!GetStackOutput`'s) cannot hold short forms.
    if matches!(inner, Node::Tagged(..)) || matches!(inner, Node::Map(_) if inner.holds_tag()) {
        return long(inner);
    }
    Node::Tagged(tag, Box::new(inner))
}

const INDENT: usize = 2;

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn write_root(out: &mut String, node: &Node<'_>) {
    match node {
        Node::Map(entries) if !entries.is_empty() => write_map(out, entries, 0, false),
        Node::Seq(items) if !items.is_empty() => write_seq(out, items, 0, false),
        Node::Tagged(tag, inner) => {
            out.push('!');
            out.push_str(tag);
            write_after_indicator(out, inner, 0);
        }
        _ => write_scalar(out, node, 0),
    }
}

/// Writes the entries of a non-empty mapping at `indent`; with `continued`, the first goes
/// on the current line (after a sequence's `- `).
fn write_map(out: &mut String, entries: &[(&str, Node<'_>)], indent: usize, continued: bool) {
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 || !continued {
            pad(out, indent);
        }
        let key = scalar_text(key);
        // An implicit key is at most 1024 characters; a longer one needs `? `.
        if key.len() > 1000 {
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            pad(out, indent);
        } else {
            out.push_str(&key);
        }
        out.push(':');
        write_after_indicator(out, value, indent);
    }
}

/// Writes the items of a non-empty sequence at `indent`, the first on the current line with
/// `continued`.
fn write_seq(out: &mut String, items: &[Node<'_>], indent: usize, continued: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !continued {
            pad(out, indent);
        }
        out.push('-');
        match item {
            Node::Map(entries) if !entries.is_empty() => {
                out.push(' ');
                write_map(out, entries, indent + INDENT, true);
            }
            Node::Seq(nested) if !nested.is_empty() => {
                out.push(' ');
                write_seq(out, nested, indent + INDENT, true);
            }
            _ => write_after_indicator(out, item, indent),
        }
    }
}

/// Writes a value after `key:`, `-` or a tag at `indent`: inline, or as a block one level in.
fn write_after_indicator(out: &mut String, node: &Node<'_>, indent: usize) {
    match node {
        Node::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            write_map(out, entries, indent + INDENT, false);
        }
        Node::Seq(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + INDENT, false);
        }
        Node::Tagged(tag, inner) => {
            out.push_str(" !");
            out.push_str(tag);
            write_after_indicator(out, inner, indent);
        }
        _ => {
            out.push(' ');
            write_scalar(out, node, indent);
        }
    }
}

/// Writes a scalar or empty collection and ends the line; a multi-line string becomes a
/// literal block indented one level past `indent` where that reads back exactly.
fn write_scalar(out: &mut String, node: &Node<'_>, indent: usize) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Number(n) => out.push_str(&number_text(n)),
        Node::Str(s) if literal_fits(s) => {
            let content = s.trim_end_matches('\n');
            let chomping = match s.len() - content.len() {
                0 => "-",
                1 => "",
                _ => "+",
            };
            out.push('|');
            out.push_str(chomping);
            for line in content.split('\n') {
                out.push('\n');
                if !line.is_empty() {
                    pad(out, indent + INDENT);
                    out.push_str(line);
                }
            }
            // The final line break, and with `|+` the empty lines after it.
            out.extend(std::iter::repeat_n('\n', (s.len() - content.len()).max(1)));
            return;
        }
        Node::Str(s) => out.push_str(&scalar_text(s)),
        Node::Seq(_) => out.push_str("[]"),
        Node::Map(_) => out.push_str("{}"),
        Node::Tagged(..) => unreachable!("write_after_indicator writes tags"),
    }
    out.push('\n');
}

/// A number as both YAML 1.1 and 1.2 read it back: a float keeps its `.` and signed exponent.
fn number_text(n: &Number) -> String {
    let text = n.to_string();
    if !n.is_f64() {
        return text;
    }
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else {
        return text;
    };
    let dot = if mantissa.contains('.') { "" } else { ".0" };
    let sign = if exponent.starts_with(['-', '+']) {
        ""
    } else {
        "+"
    };
    format!("{mantissa}{dot}e{sign}{exponent}")
}

/// Whether YAML may hold `c` unescaped (and it breaks no line, as U+2028 does in YAML 1.1).
fn printable(c: char) -> bool {
    match c {
        '\u{2028}' | '\u{2029}' | '\u{feff}' => false,
        _ => {
            matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        }
    }
}

/// Whether a multi-line string reads back exactly from a literal block (`|`).
fn literal_fits(s: &str) -> bool {
    let mut lines = s.split('\n').filter(|line| !line.is_empty());
    let starts_flush = lines
        .next()
        .is_some_and(|first| !first.starts_with([' ', '\t']));
    s.contains('\n')
        && starts_flush
        && s.chars().all(|c| c == '\n' || c == '\t' || printable(c))
        // A line of only blanks may read back as an empty line.
        && s.split('\n').all(|line| line.is_empty() || !line.trim_matches([' ', '\t']).is_empty())
}

/// A string as a one-line YAML scalar: plain where no YAML 1.1 or 1.2 reader takes it for
/// anything else, else quoted.
fn scalar_text(s: &str) -> Cow<'_, str> {
    if plain_fits(s) {
        Cow::Borrowed(s)
    } else if s.chars().all(printable) {
        Cow::Owned(format!("'{}'", s.replace('\'', "''")))
    } else {
        let mut quoted = String::with_capacity(s.len() + 2);
        quoted.push('"');
        for c in s.chars() {
            match c {
                '"' => quoted.push_str("\\\""),
                '\\' => quoted.push_str("\\\\"),
                '\n' => quoted.push_str("\\n"),
                '\t' => quoted.push_str("\\t"),
                '\r' => quoted.push_str("\\r"),
                c if printable(c) => quoted.push(c),
                c => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            }
        }
        quoted.push('"');
        Cow::Owned(quoted)
    }
}

fn plain_fits(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    // Blanks, indicators, and the first characters of numbers, timestamps, `.inf`, `~`, `=`
    // and `<<`.
    let starts_safe = !" -?:,[]{}#&*!|>'\"%@`.+~=<".contains(first) && !first.is_ascii_digit();
    starts_safe
        && s.chars().all(printable)
        && !s.ends_with([' ', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "true" | "false" | "on" | "off" | "null"
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TEMPLATE: &str = r#"AWSTemplateFormatVersion: '2010-09-09'
Description: >
  A bucket and a queue
  for the tests.
Parameters:
  Env:
    Type: String
    AllowedValues: [dev, prod]
  Port:
    Type: Number
    Default: 80
  PortText:
    Type: String
    Default: '80'
Conditions:
  IsProd: !Equals [!Ref Env, prod]
  NotProd: !Not [!Condition IsProd]
Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: !Sub '${AWS::StackName}-${Env}-data'
      VersioningConfiguration:
        Status: !If [IsProd, Enabled, !Ref AWS::NoValue]
      Tags:
        - Key: Name
          Value: !Join ['-', [!Ref Env, !Select [0, !GetAZs ''], bucket]]
  Queue:
    Type: AWS::SQS::Queue
    Condition: IsProd
    Properties:
      QueueName: !Sub
        - '${Prefix}-queue'
        - Prefix: !Ref Env
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt [Dead, Arn]
  Dead:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Code:
        ZipFile: |
          import os
          def handler(event, context):
              return os.environ["BUCKET"]
      Environment:
        Variables:
          BUCKET: !GetAtt Bucket.Arn
          DB: !GetAtt Db.Endpoint.Address
          ENABLED: true
Outputs:
  BucketArn:
    Value: !GetAtt Bucket.Arn
    Export:
      Name: !Sub ${AWS::StackName}-BucketArn
"#;

    fn parse(text: &str) -> TemplateFile {
        TemplateFile::parse(text, Path::new("t.yaml")).unwrap()
    }

    fn parse_err(text: &str) -> String {
        TemplateFile::parse(text, Path::new("dir/t.yaml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn yaml_short_forms_become_long_forms() {
        let file = parse(TEMPLATE);
        assert_eq!(file.format, TemplateFormat::Yaml);
        let t = &file.body;
        assert_eq!(t["AWSTemplateFormatVersion"], json!("2010-09-09"));
        assert_eq!(
            t["Description"],
            json!("A bucket and a queue for the tests.\n")
        );
        assert_eq!(t["Parameters"]["Port"]["Default"], json!(80));
        assert_eq!(t["Parameters"]["PortText"]["Default"], json!("80"));
        assert_eq!(
            t["Conditions"],
            json!({
                "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
                "NotProd": {"Fn::Not": [{"Condition": "IsProd"}]}
            })
        );
        let bucket = &t["Resources"]["Bucket"]["Properties"];
        assert_eq!(
            bucket["BucketName"],
            json!({"Fn::Sub": "${AWS::StackName}-${Env}-data"})
        );
        assert_eq!(
            bucket["VersioningConfiguration"]["Status"],
            json!({"Fn::If": ["IsProd", "Enabled", {"Ref": "AWS::NoValue"}]})
        );
        assert_eq!(
            bucket["Tags"][0]["Value"],
            json!({"Fn::Join": ["-", [
                {"Ref": "Env"},
                {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
                "bucket"
            ]]})
        );
        let queue = &t["Resources"]["Queue"]["Properties"];
        assert_eq!(
            queue["QueueName"],
            json!({"Fn::Sub": ["${Prefix}-queue", {"Prefix": {"Ref": "Env"}}]})
        );
        assert_eq!(
            queue["RedrivePolicy"]["deadLetterTargetArn"],
            json!({"Fn::GetAtt": ["Dead", "Arn"]})
        );
        let function = &t["Resources"]["Fn"]["Properties"];
        assert_eq!(
            function["Code"]["ZipFile"],
            json!("import os\ndef handler(event, context):\n    return os.environ[\"BUCKET\"]\n")
        );
        let variables = &function["Environment"]["Variables"];
        assert_eq!(
            variables["BUCKET"],
            json!({"Fn::GetAtt": ["Bucket", "Arn"]})
        );
        assert_eq!(
            variables["DB"],
            json!({"Fn::GetAtt": ["Db", "Endpoint.Address"]})
        );
        assert_eq!(variables["ENABLED"], json!(true));
        assert_eq!(
            t["Outputs"]["BucketArn"]["Export"]["Name"],
            json!({"Fn::Sub": "${AWS::StackName}-BucketArn"})
        );
        let keys: Vec<&str> = t["Resources"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["Bucket", "Queue", "Dead", "Fn"]);
    }

    #[test]
    fn yaml_round_trips_with_short_forms() {
        let file = parse(TEMPLATE);
        let text = file.render(&file.body);
        let again = parse(&text);
        assert_eq!(again, file, "{text}");
        assert_eq!(again.render(&again.body), text);
        for line in [
            "AWSTemplateFormatVersion: '2010-09-09'\n",
            "      BucketName: !Sub ${AWS::StackName}-${Env}-data\n",
            "      Status: !If\n",
            "    - !Ref AWS::NoValue\n",
            "        deadLetterTargetArn: !GetAtt Dead.Arn\n",
            "          DB: !GetAtt Db.Endpoint.Address\n",
            "        ZipFile: |\n          import os\n",
            "  NotProd: !Not\n    - !Condition IsProd\n",
            "    Default: 80\n",
            "    Default: '80'\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
    }

    /// Strings YAML could read as something else (booleans, numbers, dates, nulls, markup,
    /// block scalars): each must come back as the same string.
    const AWKWARD_STRINGS: &[&str] = &[
        "",
        " ",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "n",
        "true",
        "False",
        "null",
        "~",
        "2010-09-09",
        "0123",
        "1e3",
        "1_000",
        "12:30",
        ".5",
        "+1",
        "-1",
        ".inf",
        "-.inf",
        ".nan",
        "0x1F",
        "=",
        "<<",
        "a: b",
        "a:",
        "a #b",
        "#a",
        "!Ref X",
        "&a",
        "*a",
        "-",
        "- a",
        "? a",
        "|",
        ">",
        "'",
        "\"",
        "%x",
        "@x",
        "`x",
        "[a]",
        "{a}",
        ",",
        " lead",
        "trail ",
        "tab\there",
        "\u{2028}",
        "\u{85}",
        "\u{feff}x",
        "\u{7}",
        "ünïcödé",
        "a\nb",
        "a\nb\n",
        "a\nb\n\n",
        "\na",
        "\n",
        "\n\n",
        " a\nb",
        "a\n  b\n",
        "a\n \nb",
        "a\r\nb",
        "x:\ty",
        "${AWS::Region}",
        "arn:aws:s3:::b/*",
        "AWS::NoValue",
        "a.b",
        "---",
        "...",
    ];

    /// Intrinsic functions in their long and short forms, well-formed or not: each must come
    /// back as written.
    fn awkward_intrinsics() -> Value {
        json!([
        {"Ref": "X"},
        {"Ref": "yes"},
        {"Ref": 5},
        {"Ref": null},
        {"Ref": ""},
        {"Fn::Ref": "X"},
        {"Condition": "C"},
        {"Condition": {"StringEquals": {"a": "b"}}},
        {"Fn::GetAtt": ["A", "B"]},
        {"Fn::GetAtt": ["A", "B.C"]},
        {"Fn::GetAtt": ["A.B", "C"]},
        {"Fn::GetAtt": ["A", {"Ref": "B"}]},
        {"Fn::GetAtt": ["A", "B", "C"]},
        {"Fn::GetAtt": "A.B"},
        {"Fn::GetAtt": ["yes", "0"]},
        {"Fn::Base64": {"Fn::Sub": "#!/bin/bash\necho hi\n"}},
        {"Fn::GetAZs": {"Ref": "AWS::Region"}},
        {"Fn::Sub": ["${A}", {"A": {"Ref": "B"}}]},
        {"Fn::GetStackOutput": {"StackName": {"Ref": "S"}, "OutputName": "O"}},
        {"Fn::GetStackOutput": {"StackName": "S", "OutputName": "O"}},
        {"Fn::Transform": {"Name": "M", "Parameters": {"a": 1}}},
        {"Fn::Length": [1, 2]},
        {"Fn::Unknown": "x"},
        {"Ref": "X", "Other": 1},
        {"Fn::If": ["C", {"Fn::Join": ["", [{"Ref": "A"}, "-x"]]}, {"Ref": "AWS::NoValue"}]},
        {"Fn::Sub": "line one\nline two\n"},
        {"Fn::Select": [0, {"Fn::Split": [",", {"Fn::ImportValue": "E"}]}]},
        {"Fn::Cidr": [{"Fn::GetAtt": ["Vpc", "CidrBlock"]}, 6, 8]},
        {"Fn::FindInMap": ["M", {"Ref": "AWS::Region"}, "Ami"]},
        {"Fn::And": [{"Fn::Or": [{"Condition": "A"}, {"Fn::Not": [{"Condition": "B"}]}]}]},
        {"Fn::Base64": "x"},
        {"Fn::Join": []},
        {"Fn::Join": {}},
        ])
    }

    #[test]
    fn every_json_value_round_trips_through_yaml() {
        let strings = AWKWARD_STRINGS;
        let mut map = Map::new();
        for (i, s) in strings.iter().enumerate() {
            map.insert(format!("s{i}"), json!(s));
            map.insert((*s).to_string(), json!(i));
        }
        map.insert(
            "numbers".into(),
            json!([0, -7, u64::MAX, i64::MIN, 1.5, -0.0, 1e20, 2.5e-8, 80.0]),
        );
        map.insert(
            "scalars".into(),
            json!([true, false, null, [], {}, [[]], [{}]]),
        );
        map.insert("intrinsics".into(), awkward_intrinsics());
        map.insert("long".into(), json!({"k".repeat(2000): "v"}));
        let body = Value::Object(map);
        for format in [TemplateFormat::Yaml, TemplateFormat::Json] {
            let text = format.render(&body);
            let file = TemplateFile::parse(&text, Path::new("t"))
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(file.format, format);
            assert_eq!(file.body, body, "{text}");
        }
        let text = TemplateFormat::Yaml.render(&body);
        for line in [
            "- !Ref X\n",
            "- !Ref 'yes'\n",
            "- !GetAtt A.B.C\n",
            "- Fn::GetAtt: A.B\n",
            "- Fn::Base64: !Sub |\n",
            "- Fn::GetAZs: !Ref AWS::Region\n",
            "- Fn::GetStackOutput:\n",
            "- !GetStackOutput\n",
            "- Fn::Length:\n",
            "- Fn::Ref: X\n",
            "- !Condition C\n",
            "- Ref: 5\n",
            "- Ref: null\n",
            "- Condition:\n",
            "s12: '2010-09-09'\n",
            "s2: 'yes'\n",
            "- 1.0e+20\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
    }

    #[test]
    fn json_is_detected_and_stays_json() {
        let text = concat!(
            r#"  {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {"B": {"#,
            r#""Type": "AWS::S3::Bucket", "Properties": {"BucketName": {"Ref": "N"}}}}}"#
        );
        let file = TemplateFile::parse(text, Path::new("t.json")).unwrap();
        assert_eq!(file.format, TemplateFormat::Json);
        assert_eq!(
            file.body["Resources"]["B"]["Properties"]["BucketName"],
            json!({"Ref": "N"})
        );
        let rendered = file.render(&file.body);
        assert!(rendered.starts_with("{\n  \"AWSTemplateFormatVersion\": \"2010-09-09\","));
        assert_eq!(
            TemplateFile::parse(&rendered, Path::new("t.json")).unwrap(),
            file
        );
    }

    #[test]
    fn json_after_a_comment_is_read_as_yaml() {
        let file = parse("# made by hand\n{\"Resources\": {\"B\": {\"Type\": \"T\"}}}\n");
        assert_eq!(file.format, TemplateFormat::Yaml);
        assert_eq!(file.body, json!({"Resources": {"B": {"Type": "T"}}}));
    }

    #[test]
    fn broken_json_names_the_file() {
        let err = parse_err("{\"Resources\": ");
        assert!(err.starts_with("dir/t.yaml: not valid JSON"), "{err}");
    }

    /// The problem in a YAML template that is not one.
    fn yaml_problem(text: &str) -> YamlProblem {
        match TemplateFile::parse(text, Path::new("dir/t.yaml")).unwrap_err() {
            TemplateFileError::Yaml { problem, .. } => problem,
            other => panic!("not a YAML problem: {other}"),
        }
    }

    #[test]
    fn unknown_tag_names_the_tag_and_the_file() {
        assert_eq!(
            yaml_problem("Resources:\n  B:\n    Properties:\n      Name: !Foo x\n"),
            YamlProblem::UnknownTag {
                tag: "!Foo".into(),
                at: "Resources.B.Properties.Name".into()
            }
        );
        let err = parse_err("Resources:\n  B:\n    Properties:\n      Name: !Foo x\n");
        assert!(
            err.starts_with("dir/t.yaml: unknown tag !Foo at Resources.B.Properties.Name"),
            "{err}"
        );
        let err = parse_err("Outputs:\n  O:\n    Value: !Join ['', [!Bar x]]\n");
        assert!(
            err.contains("unknown tag !Bar at Outputs.O.Value[1][0]"),
            "{err}"
        );
    }

    #[test]
    fn getatt_without_a_dot_is_an_error() {
        assert_eq!(
            yaml_problem("Outputs:\n  O:\n    Value: !GetAtt Bucket\n"),
            YamlProblem::GetAttWithoutDot {
                text: "Bucket".into(),
                at: "Outputs.O.Value".into()
            }
        );
        let err = parse_err("Outputs:\n  O:\n    Value: !GetAtt Bucket\n");
        assert!(
            err.contains("!GetAtt Bucket at Outputs.O.Value is not Resource.Attribute"),
            "{err}"
        );
        let err = parse_err("Outputs:\n  O:\n    Value: !GetAtt 5\n");
        assert!(err.contains("!GetAtt 5 at Outputs.O.Value"), "{err}");
    }

    #[test]
    fn format_version_stays_a_string() {
        let file = parse("AWSTemplateFormatVersion: '2010-09-09'\nResources: {}\n");
        let text = file.render(&file.body);
        assert_eq!(
            text,
            "AWSTemplateFormatVersion: '2010-09-09'\nResources: {}\n"
        );
        assert_eq!(
            parse(&text).body["AWSTemplateFormatVersion"],
            json!("2010-09-09")
        );
        // Unquoted, YAML 1.1 reads a timestamp; written back, it is quoted.
        let file = parse("AWSTemplateFormatVersion: 2010-09-09\n");
        assert_eq!(file.body["AWSTemplateFormatVersion"], json!("2010-09-09"));
        assert!(file.render(&file.body).contains("'2010-09-09'"));
    }

    #[test]
    fn empty_file_is_an_error_naming_it() {
        for text in ["", "  \n", "# nothing here\n", "\u{feff}"] {
            assert_eq!(parse_err(text), "dir/t.yaml: the template is empty");
        }
        let err = parse_err("just a string\n");
        assert!(
            err.starts_with("dir/t.yaml: the template is not a mapping"),
            "{err}"
        );
    }

    #[test]
    fn read_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.yaml");
        let err = TemplateFile::read(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("cannot read {}", path.display())),
            "{err}"
        );
        std::fs::write(&path, TEMPLATE).unwrap();
        assert_eq!(TemplateFile::read(&path).unwrap(), parse(TEMPLATE));
    }

    #[test]
    fn yaml_oddities_are_errors_naming_the_file() {
        assert!(matches!(
            yaml_problem("a: .inf\n"),
            YamlProblem::NotFinite { at, .. } if at == "a"
        ));
        let err = parse_err("a: .inf\n");
        assert!(err.contains("at a is not a finite number"), "{err}");
        assert_eq!(
            yaml_problem("? [a]\n: b\n"),
            YamlProblem::KeyNotString {
                at: "the top level".into()
            }
        );
        assert_eq!(
            yaml_problem("1: a\n'1': b\n"),
            YamlProblem::DuplicateKey {
                key: "1".into(),
                at: "the top level".into()
            }
        );
        let err = parse_err("1: a\n'1': b\n");
        assert_eq!(err, "dir/t.yaml: 1 appears twice at the top level");
        let err = parse_err("a: [\n");
        assert!(err.starts_with("dir/t.yaml: not valid YAML"), "{err}");
    }

    #[test]
    fn a_tagged_scalar_is_a_string() {
        let file = parse("A: !Ref 5\nB: !Sub true\nC: !Select [0, !GetAZs ]\nD: !GetAtt A.1\n");
        assert_eq!(
            file.body,
            json!({
                "A": {"Ref": "5"},
                "B": {"Fn::Sub": "true"},
                "C": {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
                "D": {"Fn::GetAtt": ["A", "1"]}
            })
        );
    }

    #[test]
    fn numeric_and_boolean_keys_read_as_text() {
        let file = parse("Mappings:\n  Ports:\n    80: {Name: http}\n    true: {Name: t}\n");
        assert_eq!(
            file.body["Mappings"]["Ports"],
            json!({"80": {"Name": "http"}, "true": {"Name": "t"}})
        );
    }
}
