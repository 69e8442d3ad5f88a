//! The intrinsic-function resolver, used twice: at plan time (a value that depends on a
//! resource not yet created becomes an explicit "known after deploy" marker) and at deploy
//! time (against live attributes). What differs is the [`Environment`] it asks.
//!
//! Values stay typed JSON: a list attribute stays a list. `AWS::NoValue` removes the key or
//! list element holding it. An intrinsic this resolver does not know is an error naming the
//! JSON path.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::template::Template;

/// The key of the marker object standing for a value known only after deploy.
pub const UNKNOWN_KEY: &str = "Fn::cdkd::KnownAfterDeploy";

/// A value known only after deploy; `what` says what it is waiting for (`Bucket.Arn`).
pub fn unknown(what: impl Into<String>) -> Value {
    json!({ UNKNOWN_KEY: what.into() })
}

/// Whether `value` is an unknown marker.
pub fn is_unknown(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key(UNKNOWN_KEY))
}

/// Whether `value` holds an unknown marker anywhere.
pub fn contains_unknown(value: &Value) -> bool {
    match value {
        Value::Object(object) => is_unknown(value) || object.values().any(contains_unknown),
        Value::Array(items) => items.iter().any(contains_unknown),
        _ => false,
    }
}

/// The answer of an [`Environment`] lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// The value.
    Known(Value),
    /// Not known until deploy (a resource not created yet).
    Unknown,
    /// Cannot be answered at all; the message says why.
    Missing(String),
}

/// What the resolver needs from outside the template.
pub trait Environment {
    /// A pseudo parameter (`AWS::Region`, `AWS::AccountId`, …) other than `AWS::NoValue`.
    fn pseudo(&self, name: &str) -> Option<Value>;
    /// `Ref` of a resource of this template.
    fn resource_ref(&self, logical_id: &str) -> Lookup;
    /// `Fn::GetAtt` of a resource of this template.
    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup;
    /// `Fn::ImportValue`.
    fn import_value(&self, export_name: &str) -> Lookup;
    /// `Fn::GetStackOutput` (region `None`: the consumer's own).
    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup;
    /// `Fn::GetStackOutput` with `RoleArn`: a stack of another account, read through the role
    /// (region `None`: the consumer's own). Environments that read no other account say so.
    fn stack_output_as(
        &self,
        role_arn: &str,
        stack: &str,
        region: Option<&str>,
        output: &str,
    ) -> Lookup {
        let _ = (stack, region, output);
        Lookup::Missing(format!(
            "cross-account Fn::GetStackOutput (RoleArn {role_arn}) is not read here"
        ))
    }
    /// `Fn::GetAZs` of a region.
    fn availability_zones(&self, region: &str) -> Lookup;
}

/// A resolution failure at a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ResolveError {
    /// Where, e.g. `Resources.Fn.Properties.Environment.Variables.TABLE`.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, ResolveError> {
    Err(ResolveError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// Resolves one template's values against an environment.
pub struct Resolver<'a> {
    template: &'a Template,
    env: &'a dyn Environment,
    parameters: BTreeMap<String, Value>,
    conditions: RefCell<BTreeMap<String, Option<bool>>>,
    /// How many values are being resolved, each inside the last (see [`MAX_DEPTH`]).
    depth: std::cell::Cell<usize>,
}

const KNOWN_INTRINSICS: &[&str] = &[
    "Ref",
    "Condition",
    "Fn::GetAtt",
    "Fn::Join",
    "Fn::Sub",
    "Fn::Select",
    "Fn::Split",
    "Fn::If",
    "Fn::Equals",
    "Fn::And",
    "Fn::Or",
    "Fn::Not",
    "Fn::ImportValue",
    "Fn::GetStackOutput",
    "Fn::FindInMap",
    "Fn::Base64",
    "Fn::GetAZs",
    "Fn::Cidr",
];

/// The single key of an intrinsic object, if `value` is one.
fn intrinsic(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let (key, argument) = object.iter().next()?;
    if key == "Ref" || key.starts_with("Fn::") || (key == "Condition" && argument.is_string()) {
        Some((key.as_str(), argument))
    } else {
        None
    }
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// The longest chain of conditions naming conditions that is evaluated.
const MAX_CONDITION_CHAIN: usize = 32;

/// The deepest nesting of values, intrinsic functions and the conditions they name that is
/// resolved: JSON templates nest at most 128 levels (serde_json's limit), but conditions naming
/// conditions chain those; beyond this the template is refused by path, well before the
/// resolver's recursion could exhaust a 2 MiB thread stack.
const MAX_DEPTH: usize = 256;

impl<'a> Resolver<'a> {
    /// A resolver with parameter values: `supplied` (already-resolved values, e.g. SSM reads
    /// and overrides) over the template's defaults. A parameter with neither is an error.
    pub fn new(
        template: &'a Template,
        env: &'a dyn Environment,
        supplied: &BTreeMap<String, Value>,
    ) -> Result<Resolver<'a>, ResolveError> {
        let mut parameters = BTreeMap::new();
        for (name, parameter) in &template.parameters {
            let raw = match supplied.get(name).or(parameter.default.as_ref()) {
                Some(value) => value.clone(),
                None if parameter.no_echo => {
                    return fail(
                        &format!("Parameters.{name}"),
                        "is NoEcho and has no Default, and no value was given: cdkd keeps no copy of a NoEcho value, so every deploy needs it again; pass it with --parameters",
                    )
                }
                None => {
                    return fail(
                        &format!("Parameters.{name}"),
                        "has no Default and no value was given; pass one with --parameters",
                    )
                }
            };
            let value = match (&raw, parameter.is_list()) {
                (Value::String(text), true) => Value::Array(
                    text.split(',')
                        .map(|item| Value::String(item.trim().to_string()))
                        .collect(),
                ),
                (Value::Number(number), false) => Value::String(number.to_string()),
                _ => raw,
            };
            parameters.insert(name.clone(), value);
        }
        Ok(Resolver {
            template,
            env,
            parameters,
            conditions: RefCell::new(BTreeMap::new()),
            depth: std::cell::Cell::new(0),
        })
    }

    /// The evaluated value of a named condition.
    pub fn condition(&self, name: &str) -> Result<bool, ResolveError> {
        let path = format!("Conditions.{name}");
        match self.conditions.borrow().get(name) {
            Some(Some(value)) => return Ok(*value),
            Some(None) => return fail(&path, "is defined in terms of itself"),
            None => {}
        }
        let expression = match self.template.conditions.get(name) {
            Some(expression) => expression.clone(),
            None => return fail(&path, "is not defined in the template's Conditions"),
        };
        // Conditions being evaluated are the chain that led here: a chain longer than any
        // real template's is refused instead of exhausting the stack.
        let chain = self
            .conditions
            .borrow()
            .values()
            .filter(|v| v.is_none())
            .count();
        if chain >= MAX_CONDITION_CHAIN {
            return fail(
                &path,
                format!("is reached through a chain of more than {MAX_CONDITION_CHAIN} conditions, each naming the next; shorten the chain"),
            );
        }
        self.conditions.borrow_mut().insert(name.to_string(), None);
        let value = self.boolean(&expression, &path);
        self.conditions.borrow_mut().remove(name);
        let value = value?;
        self.conditions
            .borrow_mut()
            .insert(name.to_string(), Some(value));
        Ok(value)
    }

    /// Whether a resource (or output) gated by `condition` exists.
    pub fn is_active(&self, condition: Option<&str>) -> Result<bool, ResolveError> {
        condition.map_or(Ok(true), |name| self.condition(name))
    }

    /// Resolves a value; `AWS::NoValue` at the top comes back as `Value::Null`.
    pub fn resolve(&self, value: &Value, path: &str) -> Result<Value, ResolveError> {
        Ok(self.value(value, path)?.unwrap_or(Value::Null))
    }

    /// Resolves a resource's properties, dropping `AWS::NoValue` keys.
    pub fn resolve_properties(
        &self,
        logical_id: &str,
        properties: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ResolveError> {
        let mut out = Map::new();
        for (key, value) in properties {
            if let Some(resolved) =
                self.value(value, &format!("Resources.{logical_id}.Properties.{key}"))?
            {
                out.insert(key.clone(), resolved);
            }
        }
        Ok(out)
    }

    fn boolean(&self, value: &Value, path: &str) -> Result<bool, ResolveError> {
        match self.value(value, path)? {
            Some(Value::Bool(flag)) => Ok(flag),
            Some(Value::String(text)) if text == "true" => Ok(true),
            Some(Value::String(text)) if text == "false" => Ok(false),
            Some(other) if is_unknown(&other) => fail(
                path,
                "a condition cannot depend on a value known only after deploy",
            ),
            other => fail(
                path,
                format!(
                    "must be a condition (true or false), found {}",
                    other.unwrap_or(Value::Null)
                ),
            ),
        }
    }

    /// The core: `None` means `AWS::NoValue`.
    fn value(&self, value: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return fail(
                path,
                format!(
                    "nests values, intrinsic functions and conditions more than {MAX_DEPTH} deep"
                ),
            );
        }
        self.depth.set(depth + 1);
        let resolved = self.nested_value(value, path);
        self.depth.set(depth);
        resolved
    }

    /// [`Self::value`] one level down.
    fn nested_value(&self, value: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        if let Some((name, argument)) = intrinsic(value) {
            return self.call(name, argument, path);
        }
        match value {
            Value::Object(object) => {
                if is_unknown(value) {
                    return Ok(Some(value.clone()));
                }
                let mut out = Map::new();
                for (key, item) in object {
                    if let Some(resolved) = self.value(item, &format!("{path}.{key}"))? {
                        out.insert(key.clone(), resolved);
                    }
                }
                Ok(Some(Value::Object(out)))
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    if let Some(resolved) = self.value(item, &format!("{path}[{index}]"))? {
                        out.push(resolved);
                    }
                }
                Ok(Some(Value::Array(out)))
            }
            scalar => Ok(Some(scalar.clone())),
        }
    }

    fn known(&self, lookup: Lookup, what: &str, path: &str) -> Result<Value, ResolveError> {
        match lookup {
            Lookup::Known(value) => Ok(value),
            Lookup::Unknown => Ok(unknown(what)),
            Lookup::Missing(message) => fail(path, message),
        }
    }

    fn string_arg(
        &self,
        value: &Value,
        path: &str,
        what: &str,
    ) -> Result<Option<String>, ResolveError> {
        let resolved = self.resolve(value, path)?;
        if is_unknown(&resolved) {
            return Ok(None);
        }
        match text_of(&resolved) {
            Some(text) => Ok(Some(text)),
            None => fail(path, format!("{what} must be a string, found {resolved}")),
        }
    }

    fn list_arg(
        &self,
        value: &Value,
        path: &str,
        what: &str,
    ) -> Result<Option<Vec<Value>>, ResolveError> {
        let resolved = self.resolve(value, path)?;
        if is_unknown(&resolved) {
            return Ok(None);
        }
        match resolved {
            Value::Array(items) => Ok(Some(items)),
            other => fail(path, format!("{what} must be a list, found {other}")),
        }
    }

    fn args<'v>(
        &self,
        argument: &'v Value,
        count: std::ops::RangeInclusive<usize>,
        name: &str,
        path: &str,
    ) -> Result<&'v [Value], ResolveError> {
        match argument.as_array() {
            Some(items) if count.contains(&items.len()) => Ok(items),
            _ => fail(
                path,
                format!(
                    "{name} takes a list of {} arguments",
                    if count.start() == count.end() {
                        count.start().to_string()
                    } else {
                        format!("{} to {}", count.start(), count.end())
                    }
                ),
            ),
        }
    }

    fn reference(&self, name: &str, path: &str) -> Result<Option<Value>, ResolveError> {
        if name == "AWS::NoValue" {
            return Ok(None);
        }
        if let Some(value) = self.parameters.get(name) {
            return Ok(Some(value.clone()));
        }
        if name.starts_with("AWS::") {
            return match self.env.pseudo(name) {
                Some(value) => Ok(Some(value)),
                None => fail(path, format!("unknown pseudo parameter {name}")),
            };
        }
        if self.template.resources.contains_key(name) {
            return self
                .known(self.env.resource_ref(name), name, path)
                .map(Some);
        }
        fail(
            path,
            format!("Ref to {name}, which is neither a parameter nor a resource of this template"),
        )
    }

    fn attribute(
        &self,
        logical_id: &str,
        attribute: &str,
        path: &str,
    ) -> Result<Value, ResolveError> {
        if !self.template.resources.contains_key(logical_id) {
            return fail(
                path,
                format!("Fn::GetAtt of {logical_id}, which is not a resource of this template"),
            );
        }
        self.known(
            self.env.resource_attribute(logical_id, attribute),
            &format!("{logical_id}.{attribute}"),
            path,
        )
    }

    fn call(
        &self,
        name: &str,
        argument: &Value,
        path: &str,
    ) -> Result<Option<Value>, ResolveError> {
        let path = &format!("{path}.{name}");
        match name {
            "Ref" => match argument.as_str() {
                Some(target) => self.reference(target, path),
                None => fail(path, "Ref takes a name"),
            },
            "Condition" => Ok(Some(Value::Bool(
                self.condition(argument.as_str().unwrap_or_default())?,
            ))),
            "Fn::GetAtt" => self.get_att(argument, path),
            "Fn::Join" => self.join(argument, path),
            "Fn::Sub" => self.sub(argument, path).map(Some),
            "Fn::Select" => self.select(argument, path),
            "Fn::Split" => self.split(argument, path),
            "Fn::If" => self.if_then_else(argument, path),
            "Fn::Equals" => self.equals(argument, path),
            "Fn::And" | "Fn::Or" => self.and_or(name, argument, path),
            "Fn::Not" => {
                let items = self.args(argument, 1..=1, name, path)?;
                Ok(Some(Value::Bool(
                    !self.boolean(&items[0], &format!("{path}[0]"))?,
                )))
            }
            "Fn::ImportValue" => match self.string_arg(argument, path, "the export name")? {
                Some(export) => self
                    .known(
                        self.env.import_value(&export),
                        &format!("ImportValue {export}"),
                        path,
                    )
                    .map(Some),
                None => Ok(Some(unknown("Fn::ImportValue"))),
            },
            "Fn::GetStackOutput" => self.stack_output(argument, path).map(Some),
            "Fn::FindInMap" => self.find_in_map(argument, path),
            "Fn::Base64" => match self.string_arg(argument, path, "Fn::Base64's input")? {
                Some(text) => Ok(Some(Value::String(base64(text.as_bytes())))),
                None => Ok(Some(unknown("Fn::Base64"))),
            },
            "Fn::GetAZs" => self.get_azs(argument, path),
            "Fn::Cidr" => self.cidr_blocks(argument, path),
            other if other.starts_with("Fn::") && !KNOWN_INTRINSICS.contains(&other) => fail(
                path,
                format!("{other} is not an intrinsic function cdkd supports"),
            ),
            other => fail(
                path,
                format!("{other} is not an intrinsic function cdkd supports"),
            ),
        }
    }

    /// `Fn::GetAtt`: `"Resource.Attribute"` or `[Resource, Attribute]`.
    fn get_att(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let (logical_id, attribute) = match argument {
            Value::String(dotted) => match dotted.split_once('.') {
                Some((id, attr)) => (id.to_string(), attr.to_string()),
                None => {
                    return fail(
                        path,
                        "Fn::GetAtt takes \"Resource.Attribute\" or [Resource, Attribute]",
                    )
                }
            },
            Value::Array(items) if items.len() == 2 => {
                let id = items[0].as_str().map(ToString::to_string);
                let attr =
                    self.string_arg(&items[1], &format!("{path}[1]"), "the attribute name")?;
                match (id, attr) {
                    (Some(id), Some(attr)) => (id, attr),
                    (Some(id), None) => return Ok(Some(unknown(format!("{id}.?")))),
                    _ => return fail(path, "Fn::GetAtt takes [Resource, Attribute]"),
                }
            }
            _ => {
                return fail(
                    path,
                    "Fn::GetAtt takes \"Resource.Attribute\" or [Resource, Attribute]",
                )
            }
        };
        self.attribute(&logical_id, &attribute, path).map(Some)
    }

    /// `Fn::Join`: `[delimiter, [strings]]`.
    fn join(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 2..=2, "Fn::Join", path)?;
        let delimiter = match items[0].as_str() {
            Some(delimiter) => delimiter,
            None => return fail(path, "Fn::Join's delimiter must be a string"),
        };
        let Some(parts) = self.list_arg(&items[1], &format!("{path}[1]"), "Fn::Join's list")?
        else {
            return Ok(Some(unknown("Fn::Join")));
        };
        let mut texts = Vec::with_capacity(parts.len());
        for (index, part) in parts.iter().enumerate() {
            if contains_unknown(part) {
                return Ok(Some(unknown("Fn::Join")));
            }
            match text_of(part) {
                Some(text) => texts.push(text),
                None => {
                    return fail(
                        &format!("{path}[1][{index}]"),
                        format!("Fn::Join joins strings, found {part}"),
                    )
                }
            }
        }
        Ok(Some(Value::String(texts.join(delimiter))))
    }

    /// `Fn::Select`: `[index, list]`.
    fn select(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 2..=2, "Fn::Select", path)?;
        let Some(index) = self.string_arg(&items[0], &format!("{path}[0]"), "the index")? else {
            return Ok(Some(unknown("Fn::Select")));
        };
        let index: usize = index
            .parse()
            .or_else(|_| fail(path, format!("index {index} is not a whole number")))?;
        let Some(list) = self.list_arg(&items[1], &format!("{path}[1]"), "Fn::Select's list")?
        else {
            return Ok(Some(unknown("Fn::Select")));
        };
        match list.get(index) {
            Some(item) => Ok(Some(item.clone())),
            None => fail(
                path,
                format!("index {index} is out of range for a list of {}", list.len()),
            ),
        }
    }

    /// `Fn::Split`: `[delimiter, source]`.
    fn split(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 2..=2, "Fn::Split", path)?;
        let delimiter = match items[0].as_str() {
            Some(d) if !d.is_empty() => d,
            _ => return fail(path, "Fn::Split's delimiter must be a non-empty string"),
        };
        match self.string_arg(&items[1], &format!("{path}[1]"), "Fn::Split's source")? {
            Some(text) => Ok(Some(Value::Array(
                text.split(delimiter)
                    .map(|s| Value::String(s.to_string()))
                    .collect(),
            ))),
            None => Ok(Some(unknown("Fn::Split"))),
        }
    }

    /// `Fn::If`: `[condition, then, else]`.
    fn if_then_else(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 3..=3, "Fn::If", path)?;
        let condition = match items[0].as_str() {
            Some(condition) => condition,
            None => return fail(path, "Fn::If's first argument must be a condition name"),
        };
        if self.condition(condition)? {
            self.value(&items[1], &format!("{path}[1]"))
        } else {
            self.value(&items[2], &format!("{path}[2]"))
        }
    }

    /// `Fn::Equals`: compares the string forms, as CloudFormation does.
    fn equals(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 2..=2, "Fn::Equals", path)?;
        let left = self.resolve(&items[0], &format!("{path}[0]"))?;
        let right = self.resolve(&items[1], &format!("{path}[1]"))?;
        if contains_unknown(&left) || contains_unknown(&right) {
            return Ok(Some(unknown("Fn::Equals")));
        }
        // CloudFormation compares the string forms: "1" equals 1.
        let equal = match (text_of(&left), text_of(&right)) {
            (Some(l), Some(r)) => l == r,
            _ => left == right,
        };
        Ok(Some(Value::Bool(equal)))
    }

    /// `Fn::And` and `Fn::Or`: one to ten conditions.
    fn and_or(
        &self,
        name: &str,
        argument: &Value,
        path: &str,
    ) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 1..=10, name, path)?;
        let mut result = name == "Fn::And";
        for (index, item) in items.iter().enumerate() {
            let value = self.boolean(item, &format!("{path}[{index}]"))?;
            if name == "Fn::And" {
                result &= value;
            } else {
                result |= value;
            }
        }
        Ok(Some(Value::Bool(result)))
    }

    /// `Fn::FindInMap`: `[map, first key, second key]`, with an optional `{"DefaultValue": …}`.
    fn find_in_map(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 3..=4, "Fn::FindInMap", path)?;
        let mut keys = Vec::with_capacity(3);
        for (index, item) in items.iter().take(3).enumerate() {
            match self.string_arg(item, &format!("{path}[{index}]"), "a Fn::FindInMap key")? {
                Some(key) => keys.push(key),
                None => return Ok(Some(unknown("Fn::FindInMap"))),
            }
        }
        let found = self
            .template
            .mappings
            .get(&keys[0])
            .and_then(|map| map.get(&keys[1]))
            .and_then(|second| second.get(&keys[2]));
        match (found, items.get(3)) {
            (Some(value), _) => Ok(Some(value.clone())),
            (None, Some(default)) => match default.get("DefaultValue") {
                Some(value) => self.value(value, &format!("{path}[3].DefaultValue")),
                None => fail(path, "the fourth argument must be {\"DefaultValue\": …}"),
            },
            (None, None) => fail(
                path,
                format!("Mappings has no {}.{}.{}", keys[0], keys[1], keys[2]),
            ),
        }
    }

    /// `Fn::GetAZs`: the availability zones of a region (`""`: the stack's).
    fn get_azs(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let region = match self.string_arg(argument, path, "the region")? {
            Some(region) if !region.is_empty() => region,
            Some(_) => match self
                .env
                .pseudo("AWS::Region")
                .and_then(|r| r.as_str().map(ToString::to_string))
            {
                Some(region) => region,
                None => return fail(path, "no region to list availability zones of"),
            },
            None => return Ok(Some(unknown("Fn::GetAZs"))),
        };
        self.known(self.env.availability_zones(&region), "Fn::GetAZs", path)
            .map(Some)
    }

    /// `Fn::Cidr`: `[ip block, count, cidr bits]`.
    fn cidr_blocks(&self, argument: &Value, path: &str) -> Result<Option<Value>, ResolveError> {
        let items = self.args(argument, 3..=3, "Fn::Cidr", path)?;
        let mut texts = Vec::with_capacity(3);
        for (index, item) in items.iter().enumerate() {
            match self.string_arg(item, &format!("{path}[{index}]"), "a Fn::Cidr argument")? {
                Some(text) => texts.push(text),
                None => return Ok(Some(unknown("Fn::Cidr"))),
            }
        }
        let count: u32 = texts[1]
            .parse()
            .or_else(|_| fail(path, format!("count {} is not a whole number", texts[1])))?;
        let bits: u32 = texts[2]
            .parse()
            .or_else(|_| fail(path, format!("cidrBits {} is not a whole number", texts[2])))?;
        cidr(&texts[0], count, bits)
            .map(|blocks| {
                Some(Value::Array(
                    blocks.into_iter().map(Value::String).collect(),
                ))
            })
            .or_else(|err| fail(path, err.to_string()))
    }

    fn sub(&self, argument: &Value, path: &str) -> Result<Value, ResolveError> {
        let (text, variables) = match argument {
            Value::String(text) => (text.clone(), Map::new()),
            Value::Array(items) if items.len() == 2 => match (&items[0], &items[1]) {
                (Value::String(text), Value::Object(vars)) => (text.clone(), vars.clone()),
                _ => return fail(path, "Fn::Sub takes a string or [string, {variables}]"),
            },
            _ => return fail(path, "Fn::Sub takes a string or [string, {variables}]"),
        };
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        let mut pending = false;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return fail(path, format!("unclosed ${{ in {text:?}"));
            };
            let name = &after[..end];
            rest = &after[end + 1..];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
                continue;
            }
            let value = if let Some(variable) = variables.get(name) {
                self.resolve(variable, &format!("{path}[1].{name}"))?
            } else if let Some((logical_id, attribute)) = name
                .split_once('.')
                .filter(|(id, _)| !id.starts_with("AWS::"))
            {
                self.attribute(logical_id, attribute, path)?
            } else {
                self.reference(name, path)?
                    .unwrap_or(Value::String(String::new()))
            };
            if contains_unknown(&value) {
                pending = true;
                continue;
            }
            // The one list pseudo parameter: CloudFormation joins it with commas in a Sub.
            let value = match value {
                Value::Array(items) if name == "AWS::NotificationARNs" => Value::String(
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                other => other,
            };
            match text_of(&value) {
                Some(text) => out.push_str(&text),
                None => return fail(path, format!("${{{name}}} is not a string: {value}")),
            }
        }
        out.push_str(rest);
        Ok(if pending {
            unknown("Fn::Sub")
        } else {
            Value::String(out)
        })
    }

    fn stack_output(&self, argument: &Value, path: &str) -> Result<Value, ResolveError> {
        let object = match argument.as_object() {
            Some(object) => object,
            None => {
                return fail(
                    path,
                    "Fn::GetStackOutput takes {StackName, OutputName, Region?, RoleArn?}",
                )
            }
        };
        // A literal only: which account to read must be known before the run reads it.
        let role = match object.get("RoleArn") {
            None => None,
            Some(Value::String(role)) => Some(role.clone()),
            Some(_) => {
                return fail(
                    &format!("{path}.RoleArn"),
                    "RoleArn must be a literal string (no intrinsics)",
                )
            }
        };
        let field = |key: &str| -> Result<Option<String>, ResolveError> {
            match object.get(key) {
                None => Ok(None),
                Some(value) => match self.string_arg(value, &format!("{path}.{key}"), key)? {
                    Some(text) => Ok(Some(text)),
                    None => fail(
                        &format!("{path}.{key}"),
                        format!("{key} cannot depend on a value known only after deploy"),
                    ),
                },
            }
        };
        let stack = field("StackName")?.ok_or_else(|| ResolveError {
            path: path.to_string(),
            message: "StackName is required".into(),
        })?;
        let output = field("OutputName")?.ok_or_else(|| ResolveError {
            path: path.to_string(),
            message: "OutputName is required".into(),
        })?;
        let region = field("Region")?;
        let found = match &role {
            Some(role) => self
                .env
                .stack_output_as(role, &stack, region.as_deref(), &output),
            None => self.env.stack_output(&stack, region.as_deref(), &output),
        };
        self.known(found, &format!("{stack}.{output}"), path)
    }

    /// Every resource `value` refers to (Ref, Fn::GetAtt, Fn::Sub), skipping untaken Fn::If
    /// branches. Parameters and pseudo parameters are not resources.
    pub fn references(
        &self,
        value: &Value,
        path: &str,
        found: &mut std::collections::BTreeSet<String>,
    ) -> Result<(), ResolveError> {
        if let Some((name, argument)) = intrinsic(value) {
            let path = format!("{path}.{name}");
            match name {
                "Ref" => {
                    if let Some(target) = argument.as_str() {
                        if self.template.resources.contains_key(target)
                            && !self.parameters.contains_key(target)
                        {
                            found.insert(target.to_string());
                        }
                    }
                    return Ok(());
                }
                "Fn::GetAtt" => {
                    let target = match argument {
                        Value::String(dotted) => dotted.split('.').next().map(ToString::to_string),
                        Value::Array(items) => items
                            .first()
                            .and_then(Value::as_str)
                            .map(ToString::to_string),
                        _ => None,
                    };
                    if let Some(target) = target.filter(|t| self.template.resources.contains_key(t))
                    {
                        found.insert(target);
                    }
                    if let Value::Array(items) = argument {
                        for item in items.iter().skip(1) {
                            self.references(item, &path, found)?;
                        }
                    }
                    return Ok(());
                }
                "Fn::Sub" => {
                    let (text, variables) = match argument {
                        Value::String(text) => (text.as_str(), None),
                        Value::Array(items) if items.len() == 2 => {
                            (items[0].as_str().unwrap_or(""), items[1].as_object())
                        }
                        _ => ("", None),
                    };
                    let mut rest = text;
                    while let Some(start) = rest.find("${") {
                        let after = &rest[start + 2..];
                        let Some(end) = after.find('}') else { break };
                        let name = &after[..end];
                        rest = &after[end + 1..];
                        if name.starts_with('!') || variables.is_some_and(|v| v.contains_key(name))
                        {
                            continue;
                        }
                        let target = name.split('.').next().unwrap_or(name);
                        if self.template.resources.contains_key(target)
                            && !self.parameters.contains_key(target)
                        {
                            found.insert(target.to_string());
                        }
                    }
                    if let Some(variables) = variables {
                        for (key, item) in variables {
                            self.references(item, &format!("{path}.{key}"), found)?;
                        }
                    }
                    return Ok(());
                }
                "Fn::If" => {
                    if let Some(items) = argument.as_array().filter(|items| items.len() == 3) {
                        let taken = match items[0].as_str() {
                            Some(condition) => {
                                if self.condition(condition)? {
                                    1
                                } else {
                                    2
                                }
                            }
                            None => {
                                return fail(
                                    &path,
                                    "Fn::If's first argument must be a condition name",
                                )
                            }
                        };
                        return self.references(&items[taken], &path, found);
                    }
                }
                _ => {}
            }
            return self.references(argument, &path, found);
        }
        match value {
            Value::Object(object) => {
                for (key, item) in object {
                    self.references(item, &format!("{path}.{key}"), found)?;
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.references(item, &format!("{path}[{index}]"), found)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Standard base64 with padding (what `Fn::Base64` produces).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why `Fn::Cidr` cannot carve its blocks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// The block is not `address/prefix`.
    #[error("{0} is not a CIDR block")]
    NotABlock(String),
    /// The count is outside 1..=256.
    #[error("count must be 1 to 256, found {0}")]
    Count(u32),
    /// Blocks of that size do not fit in the block.
    #[error("cannot carve /{prefix} blocks from {block}")]
    CannotCarve {
        /// The block.
        block: String,
        /// The prefix length of the blocks asked for.
        prefix: u32,
    },
    /// Fewer blocks of that size fit than were asked for.
    #[error("{block} holds only {available} /{prefix} blocks, {count} asked")]
    TooFew {
        /// The block.
        block: String,
        /// How many fit.
        available: u64,
        /// The prefix length of the blocks asked for.
        prefix: u32,
        /// How many were asked for.
        count: u32,
    },
}

/// `Fn::Cidr`: `count` consecutive blocks with `cidr_bits` host bits carved from `block`.
pub fn cidr(block: &str, count: u32, cidr_bits: u32) -> Result<Vec<String>, CidrError> {
    let not_a_block = || CidrError::NotABlock(block.to_string());
    let (address, prefix) = block.split_once('/').ok_or_else(not_a_block)?;
    let prefix: u32 = prefix.parse().map_err(|_| not_a_block())?;
    if !(1..=256).contains(&count) {
        return Err(CidrError::Count(count));
    }
    if let Ok(v4) = address.parse::<std::net::Ipv4Addr>() {
        if prefix > 32 || cidr_bits == 0 || cidr_bits > 32 || 32 - cidr_bits < prefix {
            return Err(CidrError::CannotCarve {
                block: block.to_string(),
                prefix: 32u32.saturating_sub(cidr_bits),
            });
        }
        let new_prefix = 32 - cidr_bits;
        let available = 1u64 << (new_prefix - prefix);
        if u64::from(count) > available {
            return Err(CidrError::TooFew {
                block: block.to_string(),
                available,
                prefix: new_prefix,
                count,
            });
        }
        let base = u32::from(v4)
            & if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix)
            };
        return Ok((0..count)
            .map(|i| {
                format!(
                    "{}/{new_prefix}",
                    std::net::Ipv4Addr::from(base + (i << cidr_bits))
                )
            })
            .collect());
    }
    if let Ok(v6) = address.parse::<std::net::Ipv6Addr>() {
        if prefix > 128 || cidr_bits == 0 || cidr_bits > 128 || 128 - cidr_bits < prefix {
            return Err(CidrError::CannotCarve {
                block: block.to_string(),
                prefix: 128u32.saturating_sub(cidr_bits),
            });
        }
        let new_prefix = 128 - cidr_bits;
        let spare = new_prefix - prefix;
        if spare < 32 && u64::from(count) > (1u64 << spare) {
            return Err(CidrError::TooFew {
                block: block.to_string(),
                available: 1u64 << spare,
                prefix: new_prefix,
                count,
            });
        }
        let base = u128::from(v6)
            & if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix)
            };
        return Ok((0..count)
            .map(|i| {
                format!(
                    "{}/{new_prefix}",
                    std::net::Ipv6Addr::from(base + (u128::from(i) << cidr_bits))
                )
            })
            .collect());
    }
    Err(not_a_block())
}

#[cfg(test)]
mod tests;
