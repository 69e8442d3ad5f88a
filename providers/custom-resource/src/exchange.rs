//! One request/response exchange with a custom resource's handler.

use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{InvocationType, LogType};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use cdkd_aws_common::aws_error;
use cdkd_provider_api::protocol::StateBucketRef;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// CloudFormation's request types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestType {
    /// A create.
    Create,
    /// An update.
    Update,
    /// A delete.
    Delete,
}

impl RequestType {
    fn as_str(self) -> &'static str {
        match self {
            RequestType::Create => "Create",
            RequestType::Update => "Update",
            RequestType::Delete => "Delete",
        }
    }
}

/// What a handler answered with `SUCCESS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The physical id (`Ref`).
    pub physical_id: String,
    /// `Data`: the `Fn::GetAtt` attributes.
    pub data: Map<String, Value>,
    /// The response set `NoEcho`: every `Data` value is a secret.
    pub no_echo: bool,
}

impl Response {
    /// The attributes to record masked: all of `Data` under `NoEcho`.
    pub fn sensitive_attributes(&self) -> Vec<String> {
        if self.no_echo {
            self.data.keys().cloned().collect()
        } else {
            Vec::new()
        }
    }
}

/// How long a handler may take to answer: CloudFormation's one hour.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(3600);
/// How long after an interrupted run sent a request (its placeholder's age) the next run waits
/// for that request's answer before sending it again.
const RESEND_GRACE: Duration = Duration::from_secs(30);
/// The largest `Data` CloudFormation accepts.
const MAX_DATA_BYTES: usize = 4096;
/// The key prefix of response placeholders in the state bucket (the state spec's layout).
const RESPONSES: &str = "custom-resource-responses";
/// How long an invoke waits for a handler that is not `Active` yet: a VPC function's network
/// interfaces can take minutes.
const HANDLER_READY_PATIENCE: Duration = Duration::from_secs(15 * 60);

/// The clients and names one exchange needs.
pub struct Exchange<'a> {
    ctx: &'a PluginContext,
    logical_id: String,
    stack: String,
    resource_type: String,
    bucket: StateBucketRef,
    s3: aws_sdk_s3::Client,
    lambda: aws_sdk_lambda::Client,
    sns: aws_sdk_sns::Client,
}

/// Whether an error says the handler's function no longer exists.
pub fn handler_is_gone(error: &ProviderError) -> bool {
    error.kind == ErrorKind::NOT_FOUND
}

impl<'a> Exchange<'a> {
    /// Clients for the host's region and the state bucket's.
    pub async fn new(
        ctx: &'a PluginContext,
        logical_id: &str,
        stack: &str,
    ) -> Result<Exchange<'a>, ProviderError> {
        let resource_type = cdkd_provider_api::plugin::current_resource_type()
            .unwrap_or_else(|| "AWS::CloudFormation::CustomResource".into());
        let bucket = ctx.state_bucket().cloned().ok_or_else(|| {
            ProviderError::validation(format!(
                "{resource_type} {logical_id}: custom resources answer through cdkd's state bucket, and this command has none; run it with a state bucket (cdkd bootstrap, --state-bucket)"
            ))
        })?;
        let config = cdkd_aws_common::sdk_config(ctx).await?;
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config)
                .region(aws_sdk_s3::config::Region::new(bucket.region.clone()))
                .force_path_style(ctx.s3_force_path_style())
                .retry_partition(cdkd_aws_common::retry_partition("cdkd-s3"))
                .build(),
        );
        let lambda = aws_sdk_lambda::Client::from_conf(
            aws_sdk_lambda::config::Builder::from(&config)
                .retry_partition(cdkd_aws_common::retry_partition("cdkd-lambda"))
                .build(),
        );
        let sns = aws_sdk_sns::Client::from_conf(
            aws_sdk_sns::config::Builder::from(&config)
                .retry_partition(cdkd_aws_common::retry_partition("cdkd-sns"))
                .build(),
        );
        Ok(Exchange {
            sns,
            ctx,
            logical_id: logical_id.to_string(),
            stack: stack.to_string(),
            resource_type,
            bucket,
            s3,
            lambda,
        })
    }

    fn what(&self) -> String {
        format!("{} {}", self.resource_type, self.logical_id)
    }

    /// Sends one request and returns the handler's successful answer.
    pub async fn run(
        &self,
        request_type: RequestType,
        properties: &Map<String, Value>,
        old_properties: Option<&Map<String, Value>>,
        physical_id: Option<&str>,
        token: &str,
    ) -> Result<Response, ProviderError> {
        let what = self.what();
        let function = service_token(&what, properties)?;
        let this_request = request_id(token, request_type, &self.logical_id, physical_id);
        let key = format!("{RESPONSES}/{this_request}.json");
        // The placeholder first, as the spec says, so a stranded key is always cdkd's. A request
        // id an interrupted run already used (a create's token, a delete's physical id) finds
        // its placeholder there, with the handler's answer in it when the handler finished
        // after that run died, or the receipt a finished delete leaves: that answer is this
        // request's, and the handler is not asked again (CDK's handlers are not idempotent: a
        // second Delete of the default-SG restriction fails on the rules the first restored).
        let outcome = match self.earlier_answer(&key).await? {
            Some(answer) => {
                tracing::info!(
                    "{what}: the handler had already answered this {} request (sent by an interrupted run); its answer is used",
                    request_type.as_str()
                );
                read_response(&what, request_type, physical_id, &answer, "")
            }
            None => {
                self.exchange(
                    request_type,
                    properties,
                    old_properties,
                    physical_id,
                    &function,
                    &this_request,
                    &key,
                )
                .await
            }
        };
        match (&outcome, request_type, physical_id) {
            // A finished delete leaves a receipt until the record's removal is surely saved: a
            // run killed before that save sends the same Delete again and finds it. The receipt
            // is written before the answer's versions go, so the key never shows the empty
            // placeholder again.
            (Ok(_), RequestType::Delete, Some(id)) => match self.write_receipt(&key, id).await {
                Some(Some(receipt)) => self.remove_versions(&key, Some(&receipt)).await,
                // An unversioned bucket: the receipt replaced the answer.
                Some(None) => {}
                None => self.remove_placeholder(&key).await,
            },
            (Ok(response), RequestType::Create | RequestType::Update, _) => {
                self.remove_placeholder(&key).await;
                // A create or update answered with a physical id a receipt names (a handler
                // that reuses ids): that receipt belonged to the resource's earlier life.
                let earlier = request_id(
                    "",
                    RequestType::Delete,
                    &self.logical_id,
                    Some(&response.physical_id),
                );
                self.remove_placeholder(&format!("{RESPONSES}/{earlier}.json"))
                    .await;
            }
            _ => self.remove_placeholder(&key).await,
        }
        outcome
    }

    /// Writes the receipt of a finished delete (SUCCESS and the physical id, nothing of the
    /// answer's data) over `key`: Some(its version id, None on an unversioned bucket), or None
    /// when it could not be written.
    async fn write_receipt(&self, key: &str, physical_id: &str) -> Option<Option<String>> {
        let receipt = json!({"Status": "SUCCESS", "PhysicalResourceId": physical_id, "Reason": "receipt of a finished delete"});
        let written = self
            .s3
            .put_object()
            .bucket(&self.bucket.name)
            .key(key)
            .body(ByteStream::from(receipt.to_string().into_bytes()))
            .send()
            .await;
        match written {
            Ok(out) => Some(out.version_id().map(ToString::to_string)),
            Err(err) => {
                tracing::warn!(
                    "could not write the delete receipt {key}: {}",
                    cdkd_aws_common::error_line(&err)
                );
                None
            }
        }
    }

    /// Writes the empty placeholder at `key` unless one is there; returns the answer an
    /// earlier run's handler PUT into it, if any.
    async fn earlier_answer(&self, key: &str) -> Result<Option<Value>, ProviderError> {
        let what = self.what();
        let written = self
            .s3
            .put_object()
            .bucket(&self.bucket.name)
            .key(key)
            .if_none_match("*")
            .body(ByteStream::from_static(b""))
            .send()
            .await;
        let err = match written {
            Ok(_) => return Ok(None),
            Err(err) => err,
        };
        let exists = err
            .raw_response()
            .is_some_and(|r| r.status().as_u16() == 412 || r.status().as_u16() == 409);
        if !exists {
            return Err(aws_error(&format!("{what}: writing {key}"), err));
        }
        // The interrupted run's request may still be running: its answer is awaited for up to
        // RESEND_GRACE after the placeholder was written, before the request is sent again.
        let mut wait = Duration::from_millis(200);
        loop {
            let object = self
                .s3
                .get_object()
                .bucket(&self.bucket.name)
                .key(key)
                .send()
                .await
                .map_err(|err| aws_error(&format!("{what}: reading {key}"), err))?;
            let written = object
                .last_modified()
                .and_then(|t| std::time::SystemTime::try_from(*t).ok());
            let body = object
                .body
                .collect()
                .await
                .map(|b| b.into_bytes().to_vec())
                .unwrap_or_default();
            if let Some(answer) = earlier_response(&body) {
                return Ok(Some(answer));
            }
            let age = written
                .and_then(|t| t.elapsed().ok())
                .unwrap_or(RESEND_GRACE);
            if age >= RESEND_GRACE {
                return Ok(None);
            }
            tracing::info!(
                "{what}: an interrupted run sent this request {age:.0?} ago; waiting up to {RESEND_GRACE:?} for its answer before sending it again"
            );
            tokio::time::sleep(wait.min(RESEND_GRACE - age)).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn exchange(
        &self,
        request_type: RequestType,
        properties: &Map<String, Value>,
        old_properties: Option<&Map<String, Value>>,
        physical_id: Option<&str>,
        function: &Handler,
        request_id: &str,
        key: &str,
    ) -> Result<Response, ProviderError> {
        let what = self.what();
        let response_url = self
            .s3
            .put_object()
            .bucket(&self.bucket.name)
            .key(key)
            .presigned(
                PresigningConfig::expires_in(Duration::from_secs(2 * 3600))
                    .map_err(|e| ProviderError::other(format!("{what}: {e}")))?,
            )
            .await
            .map_err(|e| ProviderError::other(format!("{what}: signing the response URL: {e}")))?
            .uri()
            .to_string();
        let mut event = json!({
            "RequestType": request_type.as_str(),
            "ServiceToken": function.arn,
            "ResponseURL": response_url,
            "StackId": format!(
                "arn:{}:cloudformation:{}:{}:stack/{}/cdkd",
                function.partition,
                self.ctx.region(),
                function.account,
                if self.stack.is_empty() { "cdkd" } else { &self.stack }
            ),
            "RequestId": request_id,
            "ResourceType": self.resource_type,
            "LogicalResourceId": self.logical_id,
            "ResourceProperties": as_cloudformation_sends(properties),
        });
        if let Some(old) = old_properties {
            event["OldResourceProperties"] = as_cloudformation_sends(old);
        }
        if let Some(id) = physical_id {
            event["PhysicalResourceId"] = json!(id);
        }
        if function.topic {
            // CloudFormation publishes the same request; the subscriber answers through the URL.
            self.sns
                .publish()
                .topic_arn(&function.arn)
                .message(event.to_string())
                .send()
                .await
                .map_err(|err| {
                    aws_error(
                        &format!("{what}: publishing to its topic {}", function.arn),
                        err,
                    )
                })?;
            let answer = self.await_response(key, "").await?;
            return read_response(&what, request_type, physical_id, &answer, "");
        }
        // A handler created in this run may still be `Pending` (its create answers before
        // `Active`; a VPC function for minutes): Lambda refuses the invoke with a
        // ResourceConflictException until then, and ran nothing, so it is sent again.
        let invoked = cdkd_aws_common::retry_while(
            Duration::from_millis(200),
            HANDLER_READY_PATIENCE,
            |err: &ProviderError, _| err.aws_code() == Some("ResourceConflictException"),
            || async {
                self.lambda
                    .invoke()
                    .function_name(&function.arn)
                    .invocation_type(InvocationType::RequestResponse)
                    .log_type(LogType::Tail)
                    .payload(Blob::new(event.to_string()))
                    .send()
                    .await
                    .map_err(|err| {
                        aws_error(
                            &format!("{what}: invoking its handler {}", function.arn),
                            err,
                        )
                    })
            },
        )
        .await?;
        let log_tail = invoked
            .log_result()
            .and_then(|encoded| aws_smithy_types::base64::decode(encoded).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let payload: Option<Value> = invoked
            .payload()
            .and_then(|blob| serde_json::from_slice(blob.as_ref()).ok());
        if let Some(error) = invoked.function_error() {
            let message = payload
                .as_ref()
                .and_then(|p| p.get("errorMessage"))
                .and_then(Value::as_str)
                .unwrap_or(error);
            return Err(ProviderError::other(format!(
                "{what}: its handler {} failed: {message}{}",
                function.arn,
                tail_note(&log_tail)
            )));
        }
        // A handler may answer in its return value (the provider framework's onEvent does not;
        // CDK's own handlers PUT to the URL): take whichever comes first.
        let answer = match payload.filter(|p| p.get("Status").is_some()) {
            Some(direct) => direct,
            None => self.await_response(key, &log_tail).await?,
        };
        read_response(&what, request_type, physical_id, &answer, &log_tail)
    }

    /// Polls the placeholder until the handler has PUT its response: fast at first, backing
    /// off to 5 s, up to CloudFormation's hour.
    async fn await_response(&self, key: &str, log_tail: &str) -> Result<Value, ProviderError> {
        let what = self.what();
        let started = Instant::now();
        let limit = self.ctx.resource_timeout().unwrap_or(RESPONSE_TIMEOUT);
        let mut wait = Duration::from_millis(100);
        let mut announced = false;
        loop {
            let object = self
                .s3
                .get_object()
                .bucket(&self.bucket.name)
                .key(key)
                .send()
                .await;
            if let Ok(object) = object {
                let body = object
                    .body
                    .collect()
                    .await
                    .map(|b| b.into_bytes().to_vec())
                    .unwrap_or_default();
                if !body.is_empty() {
                    return serde_json::from_slice(&body).map_err(|err| {
                        ProviderError::validation(format!(
                            "{what}: its handler's response is not JSON ({err}); it must PUT CloudFormation's response document to the ResponseURL{}",
                            tail_note(log_tail)
                        ))
                    });
                }
            }
            if started.elapsed() > limit {
                return Err(ProviderError::new(
                    ErrorKind::TIMEOUT,
                    format!(
                        "{what}: its handler did not answer within {} s; check the function's logs, or allow longer with --resource-timeout{}",
                        limit.as_secs(),
                        tail_note(log_tail)
                    ),
                ));
            }
            if !announced && started.elapsed() > Duration::from_secs(10) {
                tracing::info!(
                    "{what}: waiting for its handler's response (up to {} s)",
                    limit.as_secs()
                );
                announced = true;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 3 / 2).min(Duration::from_secs(5));
        }
    }

    /// Deletes the placeholder and every version of it (it may hold the handler's secrets).
    async fn remove_placeholder(&self, key: &str) {
        self.remove_versions(key, None).await;
    }

    /// Deletes every version and delete marker of `key` but `keep`, the current version last: a
    /// run killed part-way leaves the key's current content as it was (an answer never turns
    /// back into the empty placeholder under it). Without a listing (or on an unversioned
    /// bucket), the plain object, unless a version is to be kept.
    async fn remove_versions(&self, key: &str, keep: Option<&str>) {
        let listed = self
            .s3
            .list_object_versions()
            .bucket(&self.bucket.name)
            .prefix(key)
            .send()
            .await;
        let mut versions: Vec<(bool, String)> = match &listed {
            Ok(listed) => {
                let versions = listed
                    .versions()
                    .iter()
                    .filter(|v| v.key() == Some(key))
                    .map(|v| (v.is_latest() == Some(true), v.version_id()));
                let markers = listed
                    .delete_markers()
                    .iter()
                    .filter(|m| m.key() == Some(key))
                    .map(|m| (m.is_latest() == Some(true), m.version_id()));
                versions
                    .chain(markers)
                    .filter_map(|(latest, id)| Some((latest, id?.to_string())))
                    .filter(|(_, id)| Some(id.as_str()) != keep)
                    .collect()
            }
            Err(err) => {
                // The purge fails soft (the deploy goes on) but says what survives and which
                // two grants it needs, worded as every other state-bucket purge warning.
                tracing::warn!(
                    "Could not purge noncurrent versions of 1 key(s) in s3://{}. Their previous versions survive and remain readable via GetObject with a VersionId (a custom-resource response, whose `Data` holds whatever the handler returned, secrets included). Grant s3:ListBucketVersions and s3:DeleteObjectVersion on the state bucket, or purge the key(s) by hand. Failures: {key} ({}: s3:ListBucketVersions)",
                    self.bucket.name,
                    cdkd_aws_common::error_line(err)
                );
                Vec::new()
            }
        };
        versions.sort_by_key(|(latest, _)| *latest);
        let mut versions: Vec<Option<String>> =
            versions.into_iter().map(|(_, id)| Some(id)).collect();
        if versions.is_empty() && keep.is_none() {
            versions.push(None);
        }
        for version in versions {
            let deleted = self
                .s3
                .delete_object()
                .bucket(&self.bucket.name)
                .key(key)
                .set_version_id(version.clone())
                .send()
                .await;
            if let Err(err) = deleted {
                let grant = if version.is_some() {
                    " (deleting a version needs s3:DeleteObjectVersion on the state bucket)"
                } else {
                    ""
                };
                tracing::warn!(
                    "could not delete {key} (version {}) from the state bucket: {}{grant}; `cdkd gc` collects it",
                    version.as_deref().unwrap_or("current"),
                    cdkd_aws_common::error_line(&err)
                );
            }
        }
    }
}

/// Where a custom resource's requests go: a Lambda function, or an SNS topic whose
/// subscriber answers through the ResponseURL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    arn: String,
    partition: String,
    account: String,
    topic: bool,
}

fn service_token(what: &str, properties: &Map<String, Value>) -> Result<Handler, ProviderError> {
    let token = properties
        .get("ServiceToken")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: no ServiceToken; set it to the ARN of the Lambda function that handles the resource"
            ))
        })?;
    let parts: Vec<&str> = token.split(':').collect();
    match parts.as_slice() {
        ["arn", partition, "lambda", _region, account, "function", _name, ..] => Ok(Handler {
            arn: token.to_string(),
            partition: partition.to_string(),
            account: account.to_string(),
            topic: false,
        }),
        ["arn", partition, "sns", _region, account, _topic] => Ok(Handler {
            arn: token.to_string(),
            partition: partition.to_string(),
            account: account.to_string(),
            topic: true,
        }),
        _ => Err(ProviderError::validation(format!(
            "{what}: ServiceToken {token} is neither a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>) nor an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)"
        ))),
    }
}

/// The request id: the create's token (stable across its retries and the runs that resume
/// it); a delete's is derived from the logical and physical id (the same for every run that
/// deletes that resource); an update's is fresh.
fn request_id(
    token: &str,
    request_type: RequestType,
    logical_id: &str,
    physical_id: Option<&str>,
) -> String {
    let unique = match (request_type, physical_id) {
        _ if !token.is_empty() => token.to_string(),
        (RequestType::Delete, Some(id)) => {
            let text = format!("{logical_id}\n{id}");
            format!("{:016x}{:016x}", fnv1a(&text, 0), fnv1a(&text, 1))
        }
        _ => format!("{:032x}", rand::random::<u128>()),
    };
    format!("{unique}-{}", request_type.as_str().to_lowercase())
}

/// FNV-1a, 64 bits, over `seed` and `text`: a stable name for a text of any characters.
fn fnv1a(text: &str, seed: u8) -> u64 {
    std::iter::once(seed)
        .chain(text.bytes())
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// A placeholder's content: the handler's answer, or None while it is empty (the handler has
/// not answered) or not a response document.
fn earlier_response(body: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(|answer| answer.get("Status").is_some())
}

/// Properties as CloudFormation hands them to a handler: every scalar a string.
pub fn as_cloudformation_sends(properties: &Map<String, Value>) -> Value {
    fn convert(value: &Value) -> Value {
        match value {
            Value::Bool(b) => Value::String(b.to_string()),
            Value::Number(n) => Value::String(n.to_string()),
            Value::Array(items) => Value::Array(items.iter().map(convert).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), convert(v))).collect())
            }
            other => other.clone(),
        }
    }
    convert(&Value::Object(properties.clone()))
}

/// Reads a response document.
fn read_response(
    what: &str,
    request_type: RequestType,
    physical_id: Option<&str>,
    answer: &Value,
    log_tail: &str,
) -> Result<Response, ProviderError> {
    match answer.get("Status").and_then(Value::as_str) {
        Some("SUCCESS") => {}
        Some("FAILED") => {
            let reason = answer
                .get("Reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            return Err(ProviderError::other(format!(
                "{what}: its handler answered FAILED: {reason}{}",
                tail_note(log_tail)
            )));
        }
        other => {
            return Err(ProviderError::validation(format!(
                "{what}: its handler's response has Status {other:?}; it must be SUCCESS or FAILED"
            )))
        }
    }
    let data = match answer.get("Data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(data)) => data.clone(),
        Some(_) => {
            return Err(ProviderError::validation(format!(
                "{what}: its handler's Data is not an object"
            )))
        }
    };
    let size = Value::Object(data.clone()).to_string().len();
    if size > MAX_DATA_BYTES {
        return Err(ProviderError::validation(format!(
            "{what}: its handler's Data is {size} bytes; CloudFormation accepts at most {MAX_DATA_BYTES}"
        )));
    }
    let physical_id = answer
        .get("PhysicalResourceId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .or_else(|| physical_id.map(str::to_string))
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: its handler's {} response has no PhysicalResourceId",
                request_type.as_str()
            ))
        })?;
    let no_echo = matches!(answer.get("NoEcho"), Some(Value::Bool(true)))
        || answer.get("NoEcho").and_then(Value::as_str) == Some("true");
    Ok(Response {
        physical_id,
        data,
        no_echo,
    })
}

fn tail_note(log_tail: &str) -> String {
    let tail: String = log_tail
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join(" | ");
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (log tail: {tail})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn properties_reach_the_handler_as_cloudformation_sends_them() {
        let sent = as_cloudformation_sends(&props(json!({
            "Count": 3, "On": true, "Name": "x", "List": [1, {"Deep": false}]
        })));
        assert_eq!(
            sent,
            json!({"Count": "3", "On": "true", "Name": "x", "List": ["1", {"Deep": "false"}]})
        );
    }

    #[test]
    fn a_service_token_must_be_a_lambda_function() {
        let ok = service_token(
            "C",
            &props(json!({"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:f"})),
        )
        .unwrap();
        assert_eq!(ok.account, "123456789012");
        let missing = service_token("Custom::X C", &Map::new()).unwrap_err();
        assert!(missing.message.contains("no ServiceToken"), "{missing}");
        let sns = service_token(
            "C",
            &props(json!({"ServiceToken": "arn:aws:sns:us-east-1:123456789012:t"})),
        )
        .unwrap();
        assert!(sns.topic);
        let junk = service_token("C", &props(json!({"ServiceToken": "nope"}))).unwrap_err();
        assert!(
            junk.message.contains("neither a Lambda function ARN"),
            "{junk}"
        );
    }

    #[test]
    fn responses_are_read_as_cloudformation_reads_them() {
        let ok = read_response(
            "C",
            RequestType::Create,
            None,
            &json!({"Status": "SUCCESS", "PhysicalResourceId": "p", "Data": {"A": "1"}}),
            "",
        )
        .unwrap();
        assert_eq!(ok.physical_id, "p");
        assert_eq!(ok.data["A"], json!("1"));
        let kept = read_response(
            "C",
            RequestType::Update,
            Some("old"),
            &json!({"Status": "SUCCESS"}),
            "",
        )
        .unwrap();
        assert_eq!(kept.physical_id, "old");
        let failed = read_response(
            "C",
            RequestType::Create,
            None,
            &json!({"Status": "FAILED", "Reason": "boom"}),
            "line1\nline2\n",
        )
        .unwrap_err();
        assert!(
            failed
                .message
                .contains("FAILED: boom (log tail: line1 | line2)"),
            "{failed}"
        );
        let big = json!({"Status": "SUCCESS", "PhysicalResourceId": "p", "Data": {"A": "x".repeat(5000)}});
        let refused = read_response("C", RequestType::Create, None, &big, "").unwrap_err();
        assert!(refused.message.contains("at most 4096"), "{refused}");
        let no_id = read_response(
            "C",
            RequestType::Create,
            None,
            &json!({"Status": "SUCCESS"}),
            "",
        );
        assert!(no_id.is_err());
    }

    #[test]
    fn a_create_keeps_its_request_id_across_retries() {
        assert_eq!(
            request_id("cdkd-run-1", RequestType::Create, "Res", None),
            request_id("cdkd-run-1", RequestType::Create, "Res", None)
        );
        assert_ne!(
            request_id("", RequestType::Update, "Res", Some("p-1")),
            request_id("", RequestType::Update, "Res", Some("p-1"))
        );
    }

    #[test]
    fn a_delete_resent_after_a_crash_has_the_interrupted_run_s_request_id() {
        let first = request_id("", RequestType::Delete, "Res", Some("cdkd-a|b/c"));
        assert_eq!(
            first,
            request_id("", RequestType::Delete, "Res", Some("cdkd-a|b/c"))
        );
        assert!(first.ends_with("-delete"));
        assert!(first
            .trim_end_matches("-delete")
            .chars()
            .all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            first,
            request_id("", RequestType::Delete, "Res", Some("cdkd-a|b/d"))
        );
        assert_ne!(
            first,
            request_id("", RequestType::Delete, "Other", Some("cdkd-a|b/c"))
        );
    }

    #[test]
    fn only_an_answered_placeholder_holds_an_earlier_answer() {
        assert_eq!(earlier_response(b""), None);
        assert_eq!(earlier_response(b"not json"), None);
        assert_eq!(earlier_response(b"{}"), None);
        let answer = earlier_response(br#"{"Status":"SUCCESS","PhysicalResourceId":"p"}"#);
        assert_eq!(answer.unwrap()["Status"], "SUCCESS");
    }
}
