//! The stack's API Gateway APIs as route tables, read from the template (REST APIs: their
//! resource tree, methods and stage; HTTP APIs: their routes, integrations and stage), request
//! matching as API Gateway does it (a literal segment over a `{param}`, a `{param}` over a greedy
//! `{proxy+}`, a method over `ANY`, `$default` last), and the Lambda proxy events and responses:
//! REST payload 1.0, HTTP API payload 2.0 (1.0 when the integration says so).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::function::{construct_path, FUNCTION_TYPE};
use crate::analyzer::template::Template;

/// A request as the server read it.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    /// `GET`, `POST`, ….
    pub method: String,
    /// The request target: path and query (`/prod/items/1?a=b`).
    pub target: String,
    /// Headers as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The client's address.
    pub source_ip: String,
}

/// A response to write.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers (repeatable).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A JSON `{"message": ...}` answer, as API Gateway gives for its own errors.
    pub fn message(status: u16, message: &str) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({ "message": message }).to_string().into_bytes(),
        }
    }
}

/// REST API or HTTP API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// `AWS::ApiGateway::RestApi`.
    Rest,
    /// `AWS::ApiGatewayV2::Api` with `ProtocolType: HTTP`.
    Http,
}

/// The Lambda proxy payload format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// 1.0: REST APIs, and HTTP API integrations that ask for it.
    V1,
    /// 2.0: HTTP APIs' default.
    V2,
}

/// Where a route goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A Lambda proxy integration to a function of the stack (logical id).
    Lambda {
        /// The function's logical id.
        function: String,
        /// The payload format.
        payload: Payload,
    },
    /// Anything else (HTTP, MOCK, AWS service integrations, a function of another stack).
    Unsupported(String),
}

/// One route: a method (or `ANY`) on a path (`/items/{id}`, `/{proxy+}`; `$default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `GET`, …, or `ANY`.
    pub method: String,
    /// The resource path, or `$default` (HTTP APIs).
    pub path: String,
    /// Where it goes.
    pub target: Target,
}

/// One API of the stack.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalApi {
    /// The logical id.
    pub logical_id: String,
    /// The construct path.
    pub path: String,
    /// REST or HTTP.
    pub kind: ApiKind,
    /// The stage served (REST: under `/{stage}`; HTTP: `$default` at the root, others under
    /// `/{stage}`).
    pub stage: String,
    /// The stage's variables.
    pub stage_variables: BTreeMap<String, String>,
    /// The routes.
    pub routes: Vec<Route>,
}

/// Whether `value` is `{"Ref": id}`.
fn is_ref(value: Option<&Value>, id: &str) -> bool {
    value
        .and_then(|v| v.get("Ref"))
        .and_then(Value::as_str)
        .is_some_and(|target| target == id)
}

/// Whether `value` is `{"Fn::GetAtt": [id, attribute]}` (or `"id.attribute"`).
fn is_attribute(value: Option<&Value>, id: &str, attribute: &str) -> bool {
    match value.and_then(|v| v.get("Fn::GetAtt")) {
        Some(Value::Array(items)) => {
            items.first().and_then(Value::as_str) == Some(id)
                && items.get(1).and_then(Value::as_str) == Some(attribute)
        }
        Some(Value::String(dotted)) => dotted == &format!("{id}.{attribute}"),
        _ => false,
    }
}

/// The function of this template an integration URI names (by `Fn::GetAtt [Fn, Arn]` or
/// `Ref`), anywhere inside it.
fn function_in(template: &Template, value: &Value) -> Option<String> {
    let named = |id: &str| {
        template
            .resources
            .get(id)
            .is_some_and(|r| r.kind == FUNCTION_TYPE)
            .then(|| id.to_string())
    };
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(items)) = object.get("Fn::GetAtt") {
                if let Some(found) = items.first().and_then(Value::as_str).and_then(named) {
                    return Some(found);
                }
            }
            if let Some(found) = object.get("Ref").and_then(Value::as_str).and_then(named) {
                return Some(found);
            }
            object.values().find_map(|v| function_in(template, v))
        }
        Value::Array(items) => items.iter().find_map(|v| function_in(template, v)),
        _ => None,
    }
}

fn strings(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The APIs of a template, sorted by logical id.
pub fn apis(template: &Template) -> Vec<LocalApi> {
    let mut found = Vec::new();
    for (id, resource) in &template.resources {
        let props = &resource.properties;
        match resource.kind.as_str() {
            "AWS::ApiGateway::RestApi" => found.push(rest_api(template, id, props)),
            "AWS::ApiGatewayV2::Api"
                if props.get("ProtocolType").and_then(Value::as_str) == Some("HTTP") =>
            {
                found.push(http_api(template, id));
            }
            _ => {}
        }
        if let Some(last) = found.last_mut().filter(|a| &a.logical_id == id) {
            last.path = construct_path(id, resource);
        }
    }
    found
}

fn of_type<'t>(
    template: &'t Template,
    kind: &'t str,
) -> impl Iterator<Item = (&'t String, &'t Map<String, Value>)> + 't {
    template
        .resources
        .iter()
        .filter(move |(_, r)| r.kind == kind)
        .map(|(id, r)| (id, &r.properties))
}

fn rest_api(template: &Template, api: &str, _props: &Map<String, Value>) -> LocalApi {
    // Resource id -> (parent, path part); the root is the API's RootResourceId.
    let resources: BTreeMap<&String, (&Value, &str)> =
        of_type(template, "AWS::ApiGateway::Resource")
            .filter(|(_, p)| is_ref(p.get("RestApiId"), api))
            .map(|(id, p)| {
                (
                    id,
                    (
                        p.get("ParentId").unwrap_or(&Value::Null),
                        p.get("PathPart")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    ),
                )
            })
            .collect();
    let path_of = |start: &Value| -> Option<String> {
        let mut parts = Vec::new();
        let mut current = start.clone();
        for _ in 0..64 {
            if is_attribute(Some(&current), api, "RootResourceId") {
                parts.reverse();
                return Some(format!("/{}", parts.join("/")));
            }
            let id = current.get("Ref")?.as_str()?.to_string();
            let (parent, part) = resources.get(&id)?;
            parts.push(part.to_string());
            current = (*parent).clone();
        }
        None
    };
    let mut routes = Vec::new();
    for (_, props) in of_type(template, "AWS::ApiGateway::Method") {
        if !is_ref(props.get("RestApiId"), api) {
            continue;
        }
        let Some(path) = props.get("ResourceId").and_then(path_of) else {
            continue;
        };
        let method = props
            .get("HttpMethod")
            .and_then(Value::as_str)
            .unwrap_or("ANY")
            .to_uppercase();
        let integration = props.get("Integration");
        let kind = integration
            .and_then(|i| i.get("Type"))
            .and_then(Value::as_str)
            .unwrap_or("none");
        let target = match (kind, integration.and_then(|i| i.get("Uri"))) {
            ("AWS_PROXY", Some(uri)) => match function_in(template, uri) {
                Some(function) => Target::Lambda {
                    function,
                    payload: Payload::V1,
                },
                None => {
                    Target::Unsupported("a Lambda proxy to a function outside this stack".into())
                }
            },
            (other, _) => Target::Unsupported(format!("a {other} integration")),
        };
        routes.push(Route {
            method,
            path,
            target,
        });
    }
    routes.sort_by(|a, b| (&a.path, &a.method).cmp(&(&b.path, &b.method)));
    let stage =
        of_type(template, "AWS::ApiGateway::Stage").find(|(_, p)| is_ref(p.get("RestApiId"), api));
    let (stage, stage_variables) = match stage {
        Some((_, p)) => (
            p.get("StageName")
                .and_then(Value::as_str)
                .unwrap_or("prod")
                .to_string(),
            strings(p.get("Variables")),
        ),
        None => {
            let deployment = of_type(template, "AWS::ApiGateway::Deployment")
                .find(|(_, p)| is_ref(p.get("RestApiId"), api));
            (
                deployment
                    .and_then(|(_, p)| p.get("StageName").and_then(Value::as_str))
                    .unwrap_or("prod")
                    .to_string(),
                BTreeMap::new(),
            )
        }
    };
    LocalApi {
        logical_id: api.to_string(),
        path: String::new(),
        kind: ApiKind::Rest,
        stage,
        stage_variables,
        routes,
    }
}

fn http_api(template: &Template, api: &str) -> LocalApi {
    let integrations: BTreeMap<&String, Target> =
        of_type(template, "AWS::ApiGatewayV2::Integration")
            .filter(|(_, p)| is_ref(p.get("ApiId"), api))
            .map(|(id, p)| {
                let kind = p
                    .get("IntegrationType")
                    .and_then(Value::as_str)
                    .unwrap_or("none");
                let payload = match p.get("PayloadFormatVersion").and_then(Value::as_str) {
                    Some("1.0") => Payload::V1,
                    _ => Payload::V2,
                };
                let target = match (kind, p.get("IntegrationUri")) {
                    ("AWS_PROXY", Some(uri)) => match function_in(template, uri) {
                        Some(function) => Target::Lambda { function, payload },
                        None => Target::Unsupported(
                            "a proxy integration to a function outside this stack".into(),
                        ),
                    },
                    (other, _) => Target::Unsupported(format!("a {other} integration")),
                };
                (id, target)
            })
            .collect();
    let mut routes = Vec::new();
    for (_, props) in of_type(template, "AWS::ApiGatewayV2::Route") {
        if !is_ref(props.get("ApiId"), api) {
            continue;
        }
        let key = props
            .get("RouteKey")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (method, path) = match key.split_once(' ') {
            Some((method, path)) => (method.to_uppercase(), path.to_string()),
            None => ("ANY".to_string(), key.to_string()),
        };
        let target = integrations
            .iter()
            .find(|(id, _)| target_names(props.get("Target"), id))
            .map(|(_, target)| target.clone())
            .unwrap_or_else(|| Target::Unsupported("a route without a Lambda integration".into()));
        routes.push(Route {
            method,
            path,
            target,
        });
    }
    routes.sort_by(|a, b| (&a.path, &a.method).cmp(&(&b.path, &b.method)));
    let stage = of_type(template, "AWS::ApiGatewayV2::Stage")
        .filter(|(_, p)| is_ref(p.get("ApiId"), api))
        .min_by_key(|(_, p)| p.get("StageName").and_then(Value::as_str) != Some("$default"));
    let (stage, stage_variables) = match stage {
        Some((_, p)) => (
            p.get("StageName")
                .and_then(Value::as_str)
                .unwrap_or("$default")
                .to_string(),
            strings(p.get("StageVariables")),
        ),
        None => ("$default".to_string(), BTreeMap::new()),
    };
    LocalApi {
        logical_id: api.to_string(),
        path: String::new(),
        kind: ApiKind::Http,
        stage,
        stage_variables,
        routes,
    }
}

/// Whether a route's `Target` (`integrations/{Ref}`, joined) names integration `id`.
fn target_names(target: Option<&Value>, id: &str) -> bool {
    let Some(target) = target else {
        return false;
    };
    let text = target.to_string();
    text.contains("integrations/") && text.contains(&format!("{{\"Ref\":\"{id}\"}}"))
}

/// Decodes `%XX` (and `+` in a query) into UTF-8 text (invalid bytes replaced).
pub fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' if plus_is_space => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A matched route: the route, its path parameters, and the path below the stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched<'a> {
    /// The route.
    pub route: &'a Route,
    /// `{name}` → value (decoded).
    pub parameters: BTreeMap<String, String>,
    /// The request path without the stage prefix (`/items/1`).
    pub path: String,
}

/// How one route path matches request segments: a score per segment (literal 2, `{param}` 1,
/// greedy 0) when it matches, or `None`.
fn match_path(route: &str, segments: &[&str]) -> Option<(Vec<u8>, BTreeMap<String, String>)> {
    let pattern: Vec<&str> = route.split('/').filter(|s| !s.is_empty()).collect();
    let mut score = Vec::new();
    let mut parameters = BTreeMap::new();
    for (index, part) in pattern.iter().enumerate() {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
            if index != pattern.len() - 1 || segments.len() <= index {
                return None;
            }
            let rest: Vec<String> = segments[index..]
                .iter()
                .map(|s| percent_decode(s, false))
                .collect();
            parameters.insert(name.to_string(), rest.join("/"));
            score.push(0);
            return Some((score, parameters));
        }
        let segment = segments.get(index)?;
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            parameters.insert(name.to_string(), percent_decode(segment, false));
            score.push(1);
        } else if percent_decode(segment, false) == *part {
            score.push(2);
        } else {
            return None;
        }
    }
    (segments.len() == pattern.len()).then_some((score, parameters))
}

impl LocalApi {
    /// The path prefix the API is served under (`/prod`; empty for an HTTP API's `$default`).
    pub fn prefix(&self) -> String {
        match (self.kind, self.stage.as_str()) {
            (ApiKind::Http, "$default") => String::new(),
            (_, stage) => format!("/{stage}"),
        }
    }

    /// The route a request goes to, as API Gateway picks it.
    pub fn route(&self, method: &str, path: &str) -> Option<Matched<'_>> {
        let prefix = self.prefix();
        let below = if prefix.is_empty() {
            path.to_string()
        } else if path == prefix {
            "/".to_string()
        } else {
            path.strip_prefix(&format!("{prefix}/"))
                .map(|rest| format!("/{rest}"))?
        };
        let segments: Vec<&str> = below.split('/').filter(|s| !s.is_empty()).collect();
        let method = method.to_uppercase();
        let best = self
            .routes
            .iter()
            .filter(|r| r.path != "$default" && (r.method == method || r.method == "ANY"))
            .filter_map(|r| {
                let (score, parameters) = match_path(&r.path, &segments)?;
                Some(((score, r.method != "ANY"), r, parameters))
            })
            .max_by(|a, b| a.0.cmp(&b.0));
        match best {
            Some((_, route, parameters)) => Some(Matched {
                route,
                parameters,
                path: below,
            }),
            None => self
                .routes
                .iter()
                .find(|r| r.path == "$default")
                .map(|route| Matched {
                    route,
                    parameters: BTreeMap::new(),
                    path: below,
                }),
        }
    }

    /// API Gateway's answer when no route matches.
    pub fn not_found(&self) -> HttpResponse {
        match self.kind {
            ApiKind::Rest => HttpResponse::message(403, "Missing Authentication Token"),
            ApiKind::Http => HttpResponse::message(404, "Not Found"),
        }
    }

    /// API Gateway's answer when the function fails or answers malformed.
    pub fn integration_failed(&self) -> HttpResponse {
        match self.kind {
            ApiKind::Rest => HttpResponse::message(502, "Internal server error"),
            ApiKind::Http => HttpResponse::message(500, "Internal Server Error"),
        }
    }
}

/// What the event needs besides the request.
#[derive(Debug, Clone)]
pub struct EventContext<'a> {
    /// The API.
    pub api: &'a LocalApi,
    /// The account.
    pub account: &'a str,
    /// The request id.
    pub request_id: &'a str,
    /// When the request came (Unix ms).
    pub epoch_ms: i64,
    /// The `Host` the client used.
    pub host: String,
}

fn optional<T: serde::Serialize>(map: &BTreeMap<String, T>) -> Value {
    if map.is_empty() {
        Value::Null
    } else {
        json!(map)
    }
}

fn body_of(request: &HttpRequest) -> (Value, bool) {
    if request.body.is_empty() {
        return (Value::Null, false);
    }
    match std::str::from_utf8(&request.body) {
        Ok(text) => (json!(text), false),
        Err(_) => (json!(aws_smithy_types::base64::encode(&request.body)), true),
    }
}

fn split_target(target: &str) -> (&str, &str) {
    target.split_once('?').unwrap_or((target, ""))
}

fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// The Lambda proxy event of a matched request.
pub fn event(request: &HttpRequest, matched: &Matched<'_>, context: &EventContext<'_>) -> Value {
    let payload = match &matched.route.target {
        Target::Lambda { payload, .. } => *payload,
        Target::Unsupported(_) => Payload::V1,
    };
    let common = Common::of(request, matched, context);
    if payload == Payload::V2 {
        event_v2(request, matched, context, common)
    } else {
        event_v1(request, matched, context, common)
    }
}

/// What both payload versions of an event carry.
struct Common<'r> {
    raw_path: &'r str,
    raw_query: &'r str,
    body: Value,
    base64: bool,
    user_agent: String,
    time: String,
    domain_prefix: String,
    route_key: String,
}

impl<'r> Common<'r> {
    fn of(
        request: &'r HttpRequest,
        matched: &Matched<'_>,
        context: &EventContext<'_>,
    ) -> Common<'r> {
        let (raw_path, raw_query) = split_target(&request.target);
        let (body, base64) = body_of(request);
        let user_agent = request
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let time = chrono::DateTime::from_timestamp_millis(context.epoch_ms)
            .unwrap_or_default()
            .format("%d/%b/%Y:%H:%M:%S +0000")
            .to_string();
        let domain_prefix = context
            .host
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let route_key = if matched.route.path == "$default" {
            "$default".to_string()
        } else {
            format!("{} {}", matched.route.method, matched.route.path)
        };
        Common {
            raw_path,
            raw_query,
            body,
            base64,
            user_agent,
            time,
            domain_prefix,
            route_key,
        }
    }
}

/// The payload format 2.0 event (HTTP APIs).
#[allow(
    clippy::expect_used,
    reason = "an invariant: the value was built just above in this function"
)]
fn event_v2(
    request: &HttpRequest,
    matched: &Matched<'_>,
    context: &EventContext<'_>,
    common: Common<'_>,
) -> Value {
    let Common {
        raw_path,
        raw_query,
        body,
        base64,
        user_agent,
        time,
        domain_prefix,
        route_key,
    } = common;
    let api = context.api;
    let stage = api.stage.clone();
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut cookies = Vec::new();
    for (name, value) in &request.headers {
        let name = name.to_lowercase();
        if name == "cookie" {
            cookies.extend(value.split(';').map(|c| c.trim().to_string()));
            continue;
        }
        headers
            .entry(name)
            .and_modify(|v| {
                v.push(',');
                v.push_str(value);
            })
            .or_insert_with(|| value.clone());
    }
    let mut query: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in query_pairs(raw_query) {
        query
            .entry(k)
            .and_modify(|old| {
                old.push(',');
                old.push_str(&v);
            })
            .or_insert(v);
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": context.account,
            "apiId": api.logical_id,
            "domainName": context.host,
            "domainPrefix": domain_prefix,
            "http": {
                "method": request.method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": request.source_ip,
                "userAgent": user_agent,
            },
            "requestId": context.request_id,
            "routeKey": route_key,
            "stage": stage,
            "time": time,
            "timeEpoch": context.epoch_ms,
        },
        "isBase64Encoded": base64,
    });
    let object = event.as_object_mut().expect("an object");
    if !cookies.is_empty() {
        object.insert("cookies".into(), json!(cookies));
    }
    if !query.is_empty() {
        object.insert("queryStringParameters".into(), json!(query));
    }
    if !matched.parameters.is_empty() {
        object.insert("pathParameters".into(), json!(matched.parameters));
    }
    if !api.stage_variables.is_empty() {
        object.insert("stageVariables".into(), json!(api.stage_variables));
    }
    if !body.is_null() {
        object.insert("body".into(), body);
    }
    event
}

/// The payload format 1.0 event (REST APIs, and HTTP APIs that ask for it).
#[allow(
    clippy::expect_used,
    reason = "an invariant: the value was built just above in this function"
)]
fn event_v1(
    request: &HttpRequest,
    matched: &Matched<'_>,
    context: &EventContext<'_>,
    common: Common<'_>,
) -> Value {
    let Common {
        raw_path,
        raw_query,
        body,
        base64,
        user_agent,
        time,
        domain_prefix,
        route_key,
    } = common;
    let api = context.api;
    let stage = api.stage.clone();
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut multi_headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in &request.headers {
        headers.insert(name.clone(), value.clone());
        multi_headers
            .entry(name.clone())
            .or_default()
            .push(value.clone());
    }
    let mut query: BTreeMap<String, String> = BTreeMap::new();
    let mut multi_query: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in query_pairs(raw_query) {
        query.insert(k.clone(), v.clone());
        multi_query.entry(k).or_default().push(v);
    }
    let resource = if matched.route.path == "$default" {
        "$default".to_string()
    } else {
        matched.route.path.clone()
    };
    let event_path = if api.kind == ApiKind::Rest {
        matched.path.clone()
    } else {
        raw_path.to_string()
    };
    let mut event = json!({
        "resource": resource,
        "path": event_path,
        "httpMethod": request.method,
        "headers": optional(&headers),
        "multiValueHeaders": optional(&multi_headers),
        "queryStringParameters": optional(&query),
        "multiValueQueryStringParameters": optional(&multi_query),
        "pathParameters": optional(&matched.parameters),
        "stageVariables": optional(&api.stage_variables),
        "requestContext": {
            "accountId": context.account,
            "apiId": api.logical_id,
            "domainName": context.host,
            "domainPrefix": domain_prefix,
            "extendedRequestId": context.request_id,
            "httpMethod": request.method,
            "identity": {
                "accessKey": null, "accountId": null, "caller": null, "cognitoAuthenticationProvider": null,
                "cognitoAuthenticationType": null, "cognitoIdentityId": null, "cognitoIdentityPoolId": null,
                "principalOrgId": null, "sourceIp": request.source_ip, "user": null, "userAgent": user_agent,
                "userArn": null,
            },
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "requestId": context.request_id,
            "requestTime": time,
            "requestTimeEpoch": context.epoch_ms,
            "resourceId": matched.route.path,
            "resourcePath": resource,
            "stage": stage,
        },
        "body": body,
        "isBase64Encoded": base64,
    });
    if api.kind == ApiKind::Http {
        let object = event.as_object_mut().expect("an object");
        object.insert("version".into(), json!("1.0"));
        object["requestContext"]["routeKey"] = json!(route_key);
    }
    event
}

/// The HTTP response for a function's result, as API Gateway maps it (`None`: malformed).
pub fn response(result: &Value, payload: Payload) -> Option<HttpResponse> {
    let object = result.as_object().filter(|o| o.contains_key("statusCode"));
    let Some(object) = object else {
        if payload == Payload::V2 {
            // HTTP API 2.0 infers a 200 with the result as its JSON body.
            let body = match result {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            return Some(HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: body.into_bytes(),
            });
        }
        return None;
    };
    let status = match &object["statusCode"] {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.parse().ok()?,
        _ => return None,
    };
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..=599).contains(s))?;
    let mut headers = Vec::new();
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(single) = object.get("headers").and_then(Value::as_object) {
        for (k, v) in single {
            headers.push((k.clone(), text(v)));
        }
    }
    if let Some(multi) = object.get("multiValueHeaders").and_then(Value::as_object) {
        for (k, values) in multi {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            for v in values.as_array().into_iter().flatten() {
                headers.push((k.clone(), text(v)));
            }
        }
    }
    if payload == Payload::V2 {
        for cookie in object
            .get("cookies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            headers.push(("set-cookie".into(), text(cookie)));
        }
    }
    let body = match object.get("body") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => {
            if object.get("isBase64Encoded").and_then(Value::as_bool) == Some(true) {
                aws_smithy_types::base64::decode(text).ok()?
            } else {
                text.clone().into_bytes()
            }
        }
        Some(_) if payload == Payload::V1 => return None,
        Some(other) => other.to_string().into_bytes(),
    };
    Some(HttpResponse {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Template {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/cdk.out/local/LocalStack.template.json"
        ))
        .unwrap();
        Template::parse(&serde_json::from_str(&text).unwrap()).unwrap()
    }

    fn api(kind: ApiKind) -> LocalApi {
        apis(&fixture())
            .into_iter()
            .find(|a| a.kind == kind)
            .unwrap()
    }

    #[test]
    fn the_fixture_apis_become_route_tables() {
        let rest = api(ApiKind::Rest);
        assert_eq!(rest.path, "LocalStack/RestApi");
        assert_eq!(rest.stage, "prod");
        assert_eq!(rest.stage_variables["color"], "blue");
        let node = Target::Lambda {
            function: "NodeFn9490805D".into(),
            payload: Payload::V1,
        };
        assert_eq!(
            rest.routes,
            vec![
                Route {
                    method: "ANY".into(),
                    path: "/".into(),
                    target: node.clone()
                },
                Route {
                    method: "ANY".into(),
                    path: "/{proxy+}".into(),
                    target: node
                },
            ]
        );
        let http = api(ApiKind::Http);
        assert_eq!(http.stage, "$default");
        assert_eq!(
            http.routes,
            vec![
                Route {
                    method: "POST".into(),
                    path: "/items".into(),
                    target: Target::Lambda {
                        function: "NodeFn9490805D".into(),
                        payload: Payload::V1
                    },
                },
                Route {
                    method: "GET".into(),
                    path: "/items/{id}".into(),
                    target: Target::Lambda {
                        function: "PyFnBEFD4AB6".into(),
                        payload: Payload::V2
                    },
                },
            ]
        );
    }

    fn table(routes: &[(&str, &str)]) -> LocalApi {
        LocalApi {
            logical_id: "Api".into(),
            path: "S/Api".into(),
            kind: ApiKind::Http,
            stage: "$default".into(),
            stage_variables: BTreeMap::new(),
            routes: routes
                .iter()
                .map(|(method, path)| Route {
                    method: method.to_string(),
                    path: path.to_string(),
                    target: Target::Unsupported(format!("{method} {path}")),
                })
                .collect(),
        }
    }

    fn picked(api: &LocalApi, method: &str, path: &str) -> Option<String> {
        api.route(method, path)
            .map(|m| format!("{} {}", m.route.method, m.route.path))
    }

    #[test]
    fn the_most_specific_route_wins() {
        let api = table(&[
            ("ANY", "/{proxy+}"),
            ("GET", "/items/{id}"),
            ("GET", "/items/special"),
            ("ANY", "/items/{id}"),
            ("GET", "/"),
        ]);
        assert_eq!(
            picked(&api, "GET", "/items/special").unwrap(),
            "GET /items/special"
        );
        assert_eq!(picked(&api, "GET", "/items/7").unwrap(), "GET /items/{id}");
        assert_eq!(
            picked(&api, "DELETE", "/items/7").unwrap(),
            "ANY /items/{id}"
        );
        assert_eq!(picked(&api, "GET", "/a/b/c").unwrap(), "ANY /{proxy+}");
        assert_eq!(picked(&api, "GET", "/").unwrap(), "GET /");
        assert_eq!(picked(&api, "POST", "/"), None);
        let m = api.route("GET", "/items/a%20b").unwrap();
        assert_eq!(m.parameters["id"], "a b");
        let greedy = api.route("PUT", "/x/y").unwrap();
        assert_eq!(greedy.parameters["proxy"], "x/y");
        let with_default = table(&[("ANY", "$default"), ("GET", "/a")]);
        assert_eq!(
            picked(&with_default, "GET", "/zzz").unwrap(),
            "ANY $default"
        );
    }

    #[test]
    fn rest_apis_are_served_under_their_stage() {
        let rest = api(ApiKind::Rest);
        assert_eq!(rest.prefix(), "/prod");
        let m = rest.route("GET", "/prod/items/42").unwrap();
        assert_eq!(m.route.path, "/{proxy+}");
        assert_eq!(m.path, "/items/42");
        assert_eq!(rest.route("GET", "/prod").unwrap().route.path, "/");
        assert!(rest.route("GET", "/items/42").is_none());
        assert_eq!(rest.not_found().status, 403);
        assert_eq!(api(ApiKind::Http).not_found().status, 404);
    }

    fn request(method: &str, target: &str, body: &str) -> HttpRequest {
        HttpRequest {
            method: method.into(),
            target: target.into(),
            headers: vec![
                ("Host".into(), "127.0.0.1:3000".into()),
                ("User-Agent".into(), "curl/8".into()),
                ("Cookie".into(), "a=1; b=2".into()),
            ],
            body: body.as_bytes().to_vec(),
            source_ip: "127.0.0.1".into(),
        }
    }

    fn context(api: &LocalApi) -> EventContext<'_> {
        EventContext {
            api,
            account: "123456789012",
            request_id: "r-1",
            epoch_ms: 1_700_000_000_000,
            host: "127.0.0.1:3000".into(),
        }
    }

    #[test]
    fn rest_events_are_payload_1_0() {
        let rest = api(ApiKind::Rest);
        let req = request("POST", "/prod/items/42?x=1&x=2&y=a+b", "{\"n\":1}");
        let m = rest.route("POST", "/prod/items/42").unwrap();
        let e = event(&req, &m, &context(&rest));
        assert_eq!(e["resource"], "/{proxy+}");
        assert_eq!(e["path"], "/items/42");
        assert_eq!(e["httpMethod"], "POST");
        assert_eq!(e["pathParameters"], json!({"proxy": "items/42"}));
        assert_eq!(e["stageVariables"], json!({"color": "blue"}));
        assert_eq!(e["queryStringParameters"], json!({"x": "2", "y": "a b"}));
        assert_eq!(e["multiValueQueryStringParameters"]["x"], json!(["1", "2"]));
        assert_eq!(e["headers"]["User-Agent"], "curl/8");
        assert_eq!(e["requestContext"]["path"], "/prod/items/42");
        assert_eq!(e["requestContext"]["stage"], "prod");
        assert_eq!(e["requestContext"]["resourcePath"], "/{proxy+}");
        assert_eq!(e["requestContext"]["identity"]["sourceIp"], "127.0.0.1");
        assert_eq!(e["body"], "{\"n\":1}");
        assert_eq!(e["isBase64Encoded"], false);
        assert!(e.get("version").is_none());
        let bare = event(
            &request("GET", "/prod", ""),
            &rest.route("GET", "/prod").unwrap(),
            &context(&rest),
        );
        assert_eq!(bare["body"], Value::Null);
        assert_eq!(bare["pathParameters"], Value::Null);
    }

    #[test]
    fn http_api_events_are_payload_2_0_or_1_0_as_the_integration_says() {
        let http = api(ApiKind::Http);
        let req = request("GET", "/items/42?q=1", "");
        let m = http.route("GET", "/items/42").unwrap();
        let e = event(&req, &m, &context(&http));
        assert_eq!(e["version"], "2.0");
        assert_eq!(e["routeKey"], "GET /items/{id}");
        assert_eq!(e["rawPath"], "/items/42");
        assert_eq!(e["rawQueryString"], "q=1");
        assert_eq!(e["pathParameters"], json!({"id": "42"}));
        assert_eq!(e["cookies"], json!(["a=1", "b=2"]));
        assert_eq!(e["headers"]["user-agent"], "curl/8");
        assert_eq!(e["requestContext"]["http"]["method"], "GET");
        assert_eq!(e["requestContext"]["stage"], "$default");
        assert!(e.get("body").is_none() && e.get("stageVariables").is_none());
        let post = http.route("POST", "/items").unwrap();
        let v1 = event(&request("POST", "/items", "hi"), &post, &context(&http));
        assert_eq!(v1["version"], "1.0");
        assert_eq!(v1["resource"], "/items");
        assert_eq!(v1["path"], "/items");
        assert_eq!(v1["body"], "hi");
        assert_eq!(v1["requestContext"]["routeKey"], "POST /items");
        let binary = HttpRequest {
            body: vec![0xff, 0x00],
            ..request("GET", "/items/1", "")
        };
        let b = event(&binary, &m, &context(&http));
        assert_eq!(b["isBase64Encoded"], true);
        assert_eq!(b["body"], "/wA=");
    }

    #[test]
    fn results_map_to_responses_as_api_gateway_maps_them() {
        let full = json!({
            "statusCode": 201, "headers": {"x-a": "1"},
            "multiValueHeaders": {"x-b": ["1", "2"]}, "body": "aGk=", "isBase64Encoded": true,
            "cookies": ["c=1"]
        });
        let r = response(&full, Payload::V2).unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.body, b"hi");
        assert!(r.headers.contains(&("x-b".into(), "2".into())));
        assert!(r.headers.contains(&("set-cookie".into(), "c=1".into())));
        let inferred = response(&json!({"ok": true}), Payload::V2).unwrap();
        assert_eq!(
            (inferred.status, inferred.body.as_slice()),
            (200, &b"{\"ok\":true}"[..])
        );
        assert_eq!(response(&json!({"ok": true}), Payload::V1), None);
        assert_eq!(
            response(&json!({"statusCode": "204"}), Payload::V1)
                .unwrap()
                .status,
            204
        );
        assert_eq!(
            response(&json!({"statusCode": 200, "body": {"a": 1}}), Payload::V1),
            None
        );
        assert_eq!(response(&json!({"statusCode": 99}), Payload::V1), None);
    }

    #[test]
    fn nested_rest_resources_other_integrations_and_named_http_stages() {
        let template = Template::parse(&json!({
            "Resources": {
                "Fn": {"Type": FUNCTION_TYPE, "Properties": {}},
                "Api": {"Type": "AWS::ApiGateway::RestApi", "Properties": {}},
                "Items": {"Type": "AWS::ApiGateway::Resource", "Properties": {
                    "RestApiId": {"Ref": "Api"}, "PathPart": "items",
                    "ParentId": {"Fn::GetAtt": ["Api", "RootResourceId"]}}},
                "Item": {"Type": "AWS::ApiGateway::Resource", "Properties": {
                    "RestApiId": {"Ref": "Api"}, "PathPart": "{id}", "ParentId": {"Ref": "Items"}}},
                "GetItem": {"Type": "AWS::ApiGateway::Method", "Properties": {
                    "RestApiId": {"Ref": "Api"}, "ResourceId": {"Ref": "Item"}, "HttpMethod": "GET",
                    "Integration": {"Type": "AWS_PROXY", "Uri": {"Fn::Join": ["", [
                        "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/",
                        {"Fn::GetAtt": ["Fn", "Arn"]}, "/invocations"]]}}}},
                "Options": {"Type": "AWS::ApiGateway::Method", "Properties": {
                    "RestApiId": {"Ref": "Api"}, "ResourceId": {"Ref": "Items"}, "HttpMethod": "OPTIONS",
                    "Integration": {"Type": "MOCK"}}},
                "Stage": {"Type": "AWS::ApiGateway::Stage", "Properties": {
                    "RestApiId": {"Ref": "Api"}, "StageName": "v1"}},
                "Http": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"ProtocolType": "HTTP"}},
                "Ws": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"ProtocolType": "WEBSOCKET"}},
                "Integ": {"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
                    "ApiId": {"Ref": "Http"}, "IntegrationType": "AWS_PROXY",
                    "IntegrationUri": {"Fn::GetAtt": ["Fn", "Arn"]}, "PayloadFormatVersion": "2.0"}},
                "Default": {"Type": "AWS::ApiGatewayV2::Route", "Properties": {
                    "ApiId": {"Ref": "Http"}, "RouteKey": "$default",
                    "Target": {"Fn::Join": ["", ["integrations/", {"Ref": "Integ"}]]}}},
                "DevStage": {"Type": "AWS::ApiGatewayV2::Stage", "Properties": {
                    "ApiId": {"Ref": "Http"}, "StageName": "dev", "StageVariables": {"mode": "test"}}}
            }
        }))
        .unwrap();
        let found = apis(&template);
        assert_eq!(found.len(), 2, "the WebSocket API is not served: {found:?}");
        let rest = &found[0];
        assert_eq!(rest.stage, "v1");
        assert_eq!(rest.routes[0].path, "/items");
        assert_eq!(
            rest.routes[0].target,
            Target::Unsupported("a MOCK integration".into())
        );
        assert_eq!(rest.routes[1].path, "/items/{id}");
        let m = rest.route("GET", "/v1/items/9").unwrap();
        assert_eq!(m.parameters["id"], "9");
        assert!(rest.route("POST", "/v1/items/9").is_none());
        let http = &found[1];
        assert_eq!(
            (http.stage.as_str(), http.prefix()),
            ("dev", "/dev".to_string())
        );
        let m = http.route("DELETE", "/dev/any/path").unwrap();
        assert_eq!(m.route.path, "$default");
        let e = event(&request("DELETE", "/dev/any/path", ""), &m, &context(http));
        assert_eq!(e["routeKey"], "$default");
        assert_eq!(e["rawPath"], "/dev/any/path");
        assert_eq!(e["stageVariables"], json!({"mode": "test"}));
        assert_eq!(e["requestContext"]["stage"], "dev");
        assert!(
            http.route("GET", "/any/path").is_none(),
            "outside the stage"
        );
    }

    #[test]
    fn percent_decoding_handles_plus_and_bad_escapes() {
        assert_eq!(percent_decode("a%20b+c", true), "a b c");
        assert_eq!(percent_decode("a+b", false), "a+b");
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%zz", false), "%zz");
    }
}
