//! The Cloud Control provider: any `AWS::` type no plugin handles.
//!
//! Create sends the desired state (nulls stripped) and polls the request until it leaves
//! IN_PROGRESS: first immediately (fast resources finish within one round trip), then paced by
//! the time the request has taken, a tenth of it, from 100 ms up to 5 s ([`PollSchedule`]): a
//! request takes 16-27 s for simple types on AWS and minutes for a NAT gateway or a
//! distribution, so its end is seen within about a tenth of its time, with about two dozen
//! polls per tenfold of it. The reference polls 1 s ×1.5 up to 10 s, which costs a second or
//! more on every fast resource and up to 10 s on slow ones. A failed create that left a
//! resource behind is deleted. Update sends an RFC 6902 patch of the top-level properties that
//! changed (none: no call). Delete treats NotFound as deleted.

use std::time::{Duration, Instant};

use aws_sdk_cloudcontrol::types::{OperationStatus, ProgressEvent};
use aws_sdk_cloudcontrol::Client;
use cdkd_aws_common::Pacing;
use cdkd_provider_api::protocol::{CreateResult, DeleteResult, UpdateResult};
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{json, Map, Value};

use crate::aws_env::AwsEnvironment;

/// Polling and timeouts.
#[derive(Debug, Clone)]
pub struct PollSchedule {
    /// The pauses between polls after the first (which is immediate): a tenth of the time the
    /// request has taken so far, within the bounds.
    pub pacing: Pacing,
    /// The longest a single operation may take.
    pub timeout: Duration,
}

impl Default for PollSchedule {
    fn default() -> PollSchedule {
        PollSchedule {
            pacing: Pacing {
                floor: Duration::from_millis(100),
                cap: Duration::from_secs(5),
            },
            timeout: Duration::from_secs(30 * 60),
        }
    }
}

impl PollSchedule {
    /// The wait before the next poll, the request having taken `waited` so far and been
    /// polled `polls` times: none before the first, then a tenth of `waited` within the bounds.
    pub fn delay(&self, polls: u32, waited: Duration) -> Duration {
        if polls == 0 {
            Duration::ZERO
        } else {
            self.pacing.pause(waited)
        }
    }
}

/// Cloud Control in one region.
#[derive(Debug, Clone)]
pub struct CloudControlProvider {
    client: Client,
    schedule: PollSchedule,
}

fn kind_of(code: &str) -> ErrorKind {
    match code {
        "NotFound" => ErrorKind::NOT_FOUND,
        "AlreadyExists" => ErrorKind::ALREADY_EXISTS,
        "Throttling" | "ServiceLimitExceeded" => ErrorKind::THROTTLED,
        "AccessDenied" | "InvalidCredentials" => ErrorKind::ACCESS_DENIED,
        "InvalidRequest" | "NotUpdatable" | "InvalidTypeConfiguration" => ErrorKind::VALIDATION,
        "ResourceConflict" => ErrorKind::CONFLICT,
        "NotStabilized" => ErrorKind::TIMEOUT,
        _ => ErrorKind::OTHER,
    }
}

fn sdk_error<E, R>(what: &str, err: aws_sdk_cloudcontrol::error::SdkError<E, R>) -> ProviderError
where
    E: aws_sdk_cloudcontrol::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + cdkd_aws_common::HasStatus + 'static,
{
    use aws_sdk_cloudcontrol::error::ProvideErrorMetadata;
    let code = err.code().unwrap_or("").to_string();
    let kind = match code.as_str() {
        "ThrottlingException" => ErrorKind::THROTTLED,
        "ResourceNotFoundException" => ErrorKind::NOT_FOUND,
        "TypeNotFoundException" | "UnsupportedActionException" | "ValidationException" => {
            ErrorKind::UNSUPPORTED
        }
        "AlreadyExistsException" => ErrorKind::ALREADY_EXISTS,
        _ => ErrorKind::OTHER,
    };
    let detail = err
        .message()
        .map(ToString::to_string)
        .unwrap_or_else(|| cdkd_aws_common::error_line(&err));
    let error = ProviderError::new(kind, format!("{what}: {detail}"));
    if code.is_empty() {
        error
    } else {
        error.with_aws_code(code)
    }
}

/// The error a failed (or cancelled) final event stands for; `None` for a success.
fn failure_of(
    resource_type: &str,
    logical_id: &str,
    event: &ProgressEvent,
) -> Option<ProviderError> {
    if event.operation_status() == Some(&OperationStatus::Success) {
        return None;
    }
    let code = event
        .error_code()
        .map(|c| c.as_str().to_string())
        .unwrap_or_default();
    let message = event.status_message().unwrap_or("no details").to_string();
    Some(
        ProviderError::new(
            kind_of(&code),
            format!(
                "{resource_type} {logical_id}: Cloud Control {} failed: {message}",
                event.operation().map(|o| o.as_str()).unwrap_or("operation")
            ),
        )
        .with_aws_code(if code.is_empty() {
            "GeneralServiceException".into()
        } else {
            code
        }),
    )
}

/// Whether a failed status poll is worth polling again (the operation itself goes on).
fn poll_again(error: &ProviderError) -> bool {
    error.kind.is_retryable()
        || matches!(
            error.aws_code(),
            Some(
                "InternalFailure"
                    | "ServiceUnavailable"
                    | "ServiceUnavailableException"
                    | "InternalServerError"
                    | "RequestTimeout"
            )
        )
        || error.message.contains("dispatch failure")
        || error.message.contains("timed out")
}

/// Whether a model answers `Fn::GetAtt` of `name` (`Endpoint.Address` reads nested values).
pub fn has_attribute(model: &Map<String, Value>, name: &str) -> bool {
    if model.contains_key(name) {
        return true;
    }
    let mut parts = name.split('.');
    let Some(mut current) = parts.next().and_then(|first| model.get(first)) else {
        return false;
    };
    for part in parts {
        match current.get(part) {
            Some(next) => current = next,
            None => return false,
        }
    }
    true
}

/// Removes `null` values (Cloud Control rejects them) at every depth.
pub fn strip_nulls(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The RFC 6902 patch turning `previous` into `desired`, top-level properties only.
pub fn top_level_patch(previous: &Map<String, Value>, desired: &Map<String, Value>) -> Vec<Value> {
    let mut operations = Vec::new();
    for (key, value) in desired {
        let path = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        match previous.get(key) {
            None => {
                operations.push(json!({"op": "add", "path": path, "value": strip_nulls(value)}))
            }
            Some(old) if old != value => {
                operations.push(json!({"op": "replace", "path": path, "value": strip_nulls(value)}))
            }
            Some(_) => {}
        }
    }
    for key in previous.keys().filter(|k| !desired.contains_key(*k)) {
        operations.push(json!({"op": "remove", "path": format!("/{}", key.replace('~', "~0").replace('/', "~1"))}));
    }
    operations
}

impl CloudControlProvider {
    /// A provider for `region`.
    pub fn new(aws: &AwsEnvironment, region: &str, schedule: PollSchedule) -> CloudControlProvider {
        let config = aws_sdk_cloudcontrol::config::Builder::from(aws.sdk_config())
            .region(aws_sdk_cloudcontrol::config::Region::new(
                region.to_string(),
            ))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-cloudcontrol"))
            // The SDK retries throttling itself; the interceptor tells the operation's lane.
            .interceptor(super::concurrency::ThrottlingInterceptor)
            .build();
        CloudControlProvider {
            client: Client::from_conf(config),
            schedule,
        }
    }

    async fn wait(
        &self,
        resource_type: &str,
        logical_id: &str,
        event: ProgressEvent,
    ) -> Result<ProgressEvent, ProviderError> {
        let done = self.finished(resource_type, logical_id, event).await?;
        match failure_of(resource_type, logical_id, &done) {
            Some(error) => Err(error),
            None => Ok(done),
        }
    }

    /// Polls until the request leaves IN_PROGRESS; returns its final event, failed or not.
    async fn finished(
        &self,
        resource_type: &str,
        logical_id: &str,
        mut event: ProgressEvent,
    ) -> Result<ProgressEvent, ProviderError> {
        let started = Instant::now();
        let mut polls = 0;
        loop {
            if let Some(
                OperationStatus::Success
                | OperationStatus::Failed
                | OperationStatus::CancelComplete,
            ) = event.operation_status()
            {
                return Ok(event);
            }
            if started.elapsed() > self.schedule.timeout {
                return Err(ProviderError::new(
                    ErrorKind::TIMEOUT,
                    format!(
                        "{resource_type} {logical_id}: Cloud Control did not finish within {:?}",
                        self.schedule.timeout
                    ),
                ));
            }
            let operation = event
                .operation()
                .map(|o| o.as_str().to_lowercase())
                .unwrap_or_else(|| "request".into());
            super::activity::waiting(&format!("Cloud Control: {operation} in progress, polling"));
            tokio::time::sleep(self.schedule.delay(polls, started.elapsed())).await;
            polls += 1;
            let token = event.request_token().unwrap_or_default().to_string();
            let polled = self
                .client
                .get_resource_request_status()
                .request_token(&token)
                .send()
                .await
                .map_err(|err| {
                    sdk_error(
                        &format!("{resource_type} {logical_id}: GetResourceRequestStatus"),
                        err,
                    )
                });
            match polled {
                Ok(answer) => {
                    event = answer.progress_event.ok_or_else(|| {
                        ProviderError::other(format!(
                            "{resource_type} {logical_id}: Cloud Control returned no progress event"
                        ))
                    })?;
                }
                // Only the poll failed: poll again (within the operation's timeout), never
                // send the operation a second time.
                Err(err) if poll_again(&err) => {
                    tracing::debug!("{resource_type} {logical_id}: polling again after: {err}");
                }
                Err(err) => return Err(err),
            }
        }
    }

    async fn model(
        &self,
        resource_type: &str,
        identifier: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let answer = self
            .client
            .get_resource()
            .type_name(resource_type)
            .identifier(identifier)
            .send()
            .await
            .map_err(|err| sdk_error(&format!("{resource_type} {identifier}: GetResource"), err))?;
        let properties = answer
            .resource_description()
            .and_then(|d| d.properties())
            .unwrap_or("{}");
        Ok(serde_json::from_str::<Value>(properties)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default())
    }

    /// The model of a finished event, read back with one `GetResource` when the event
    /// carries none or lacks an attribute the template reads (Cloud Control's final models
    /// often hold only the identifier and the desired properties).
    async fn attributes_of(
        &self,
        resource_type: &str,
        event: &ProgressEvent,
        identifier: &str,
        needed: &[String],
    ) -> Result<Map<String, Value>, ProviderError> {
        let model = event
            .resource_model()
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        if !model.is_empty() && needed.iter().all(|name| has_attribute(&model, name)) {
            return Ok(model);
        }
        let mut read = self.model(resource_type, identifier).await?;
        for (key, value) in model {
            read.entry(key).or_insert(value);
        }
        Ok(read)
    }

    /// Finds a resource of `resource_type` whose `property` equals `value` (a name cdkd chose),
    /// through `ListResources`; returns its identifier and model.
    pub async fn find_by_property(
        &self,
        resource_type: &str,
        property: &str,
        value: &str,
    ) -> Result<Option<(String, Map<String, Value>)>, ProviderError> {
        let mut next: Option<String> = None;
        loop {
            let answer = self
                .client
                .list_resources()
                .type_name(resource_type)
                .set_next_token(next.take())
                .send()
                .await
                .map_err(|err| sdk_error(&format!("{resource_type}: ListResources"), err))?;
            for description in answer.resource_descriptions() {
                let model = description
                    .properties()
                    .and_then(|p| serde_json::from_str::<Value>(p).ok())
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                let identifier = description.identifier().unwrap_or_default();
                if model.get(property).and_then(Value::as_str) == Some(value)
                    || (identifier == value && !identifier.is_empty())
                {
                    return Ok(Some((identifier.to_string(), model)));
                }
            }
            match answer.next_token() {
                Some(token) if !token.is_empty() => next = Some(token.to_string()),
                _ => return Ok(None),
            }
        }
    }

    /// Creates a resource; returns its identifier and model as attributes.
    ///
    /// `token` is the create's `ClientToken`: the caller keeps it across retries, so a create
    /// whose answer was lost is answered from the first request instead of made twice.
    pub async fn create(
        &self,
        resource_type: &str,
        logical_id: &str,
        properties: &Map<String, Value>,
        token: &str,
        needed: &[String],
    ) -> Result<CreateResult, ProviderError> {
        let desired = strip_nulls(&Value::Object(properties.clone())).to_string();
        let started = self
            .client
            .create_resource()
            .type_name(resource_type)
            .desired_state(desired)
            .client_token(token.chars().take(128).collect::<String>())
            .send()
            .await
            .map_err(|err| {
                sdk_error(
                    &format!("{resource_type} {logical_id}: CreateResource"),
                    err,
                )
            })?
            .progress_event
            .ok_or_else(|| {
                ProviderError::other(format!("{resource_type} {logical_id}: no progress event"))
            })?;
        let done = self.finished(resource_type, logical_id, started).await?;
        if let Some(error) = failure_of(resource_type, logical_id, &done) {
            // A failed create can leave a half-built resource behind; when the final event
            // names it, delete it so nothing is stranded.
            if let Some(identifier) = done.identifier().filter(|id| !id.is_empty()) {
                if error.kind != ErrorKind::ALREADY_EXISTS {
                    let _ = self.delete(resource_type, logical_id, identifier).await;
                }
            }
            return Err(error);
        }
        let identifier = done
            .identifier()
            .ok_or_else(|| {
                ProviderError::other(format!(
                    "{resource_type} {logical_id}: Cloud Control returned no identifier"
                ))
            })?
            .to_string();
        let attributes = self
            .attributes_of(resource_type, &done, &identifier, needed)
            .await?;
        Ok(CreateResult {
            physical_id: identifier,
            attributes,
            ..Default::default()
        })
    }

    /// Updates in place with a patch of what changed.
    pub async fn update(
        &self,
        resource_type: &str,
        logical_id: &str,
        identifier: &str,
        previous: &Map<String, Value>,
        desired: &Map<String, Value>,
        needed: &[String],
    ) -> Result<UpdateResult, ProviderError> {
        let patch = top_level_patch(previous, desired);
        if patch.is_empty() {
            return Ok(UpdateResult {
                physical_id: identifier.to_string(),
                replaced: false,
                attributes: self.model(resource_type, identifier).await?,
                ..Default::default()
            });
        }
        let started = self
            .client
            .update_resource()
            .type_name(resource_type)
            .identifier(identifier)
            .patch_document(Value::Array(patch).to_string())
            .send()
            .await
            .map_err(|err| {
                sdk_error(
                    &format!("{resource_type} {logical_id}: UpdateResource"),
                    err,
                )
            })?
            .progress_event
            .ok_or_else(|| {
                ProviderError::other(format!("{resource_type} {logical_id}: no progress event"))
            })?;
        let done = self.wait(resource_type, logical_id, started).await?;
        let identifier = done.identifier().unwrap_or(identifier).to_string();
        Ok(UpdateResult {
            attributes: self
                .attributes_of(resource_type, &done, &identifier, needed)
                .await?,
            physical_id: identifier,
            replaced: false,
            ..Default::default()
        })
    }

    /// Deletes; a resource already gone counts as deleted.
    pub async fn delete(
        &self,
        resource_type: &str,
        logical_id: &str,
        identifier: &str,
    ) -> Result<DeleteResult, ProviderError> {
        let started = match self
            .client
            .delete_resource()
            .type_name(resource_type)
            .identifier(identifier)
            .send()
            .await
        {
            Ok(answer) => answer.progress_event,
            Err(err) => {
                let err = sdk_error(
                    &format!("{resource_type} {logical_id}: DeleteResource"),
                    err,
                );
                if err.kind == ErrorKind::NOT_FOUND {
                    return Ok(DeleteResult::Deleted);
                }
                return Err(err);
            }
        };
        let Some(started) = started else {
            return Ok(DeleteResult::Deleted);
        };
        match self.wait(resource_type, logical_id, started).await {
            Ok(_) => Ok(DeleteResult::Deleted),
            Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(DeleteResult::Deleted),
            Err(err) => Err(err),
        }
    }

    /// The AWS-current properties, `None` when the resource is gone.
    pub async fn read_current_state(
        &self,
        resource_type: &str,
        identifier: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        match self.model(resource_type, identifier).await {
            Ok(model) => Ok(Some(model)),
            Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_polls_at_once_then_a_tenth_of_the_time_taken() {
        let schedule = PollSchedule::default();
        let ms = |ms: u64| Duration::from_millis(ms);
        assert_eq!(schedule.delay(0, ms(430)), Duration::ZERO);
        assert_eq!(schedule.delay(1, ms(430)), ms(100));
        assert_eq!(schedule.delay(5, ms(16_000)), ms(1_600));
        assert_eq!(schedule.delay(30, ms(95_000)), ms(5_000));
    }

    #[test]
    fn a_request_is_seen_finished_within_a_tenth_of_its_time() {
        let schedule = PollSchedule::default();
        // Cloud Control's measured and estimated times: OAC, S3, security group, EC2 instance,
        // NAT gateway, distribution, RDS instance.
        for secs in [2.3, 16.0, 26.5, 45.0, 95.0, 175.0, 425.0] {
            let done = Duration::from_secs_f64(secs);
            // The create's own answer (0.43 s), then each poll's round trip (0.33 s).
            let mut now = Duration::from_millis(430);
            let mut polls = 0;
            while now < done {
                now += schedule.delay(polls, now) + Duration::from_millis(330);
                polls += 1;
            }
            let late = now - done;
            assert!(
                late <= done / 10 + Duration::from_millis(430),
                "{secs} s: seen {late:?} late"
            );
            assert!(polls <= 120, "{secs} s: {polls} polls");
        }
    }

    #[test]
    fn patches_cover_add_replace_remove_and_escape_paths() {
        let previous = json!({"A": 1, "B": {"x": 1}, "Gone": true, "a/b": 1})
            .as_object()
            .unwrap()
            .clone();
        let desired = json!({"A": 1, "B": {"x": 2}, "New": [1], "a/b": 2})
            .as_object()
            .unwrap()
            .clone();
        let patch = top_level_patch(&previous, &desired);
        assert_eq!(
            patch,
            vec![
                json!({"op": "replace", "path": "/B", "value": {"x": 2}}),
                json!({"op": "add", "path": "/New", "value": [1]}),
                json!({"op": "replace", "path": "/a~1b", "value": 2}),
                json!({"op": "remove", "path": "/Gone"}),
            ]
        );
        assert!(top_level_patch(&previous, &previous).is_empty());
    }

    #[test]
    fn a_throttled_or_failed_poll_is_polled_again_and_a_refusal_is_not() {
        assert!(poll_again(&ProviderError::new(
            ErrorKind::THROTTLED,
            "slow down"
        )));
        assert!(poll_again(
            &ProviderError::other("GetResourceRequestStatus: boom")
                .with_aws_code("InternalFailure")
        ));
        assert!(poll_again(&ProviderError::other(
            "dispatch failure: connection refused"
        )));
        assert!(!poll_again(
            &ProviderError::new(ErrorKind::OTHER, "no such request")
                .with_aws_code("RequestTokenNotFoundException")
        ));
    }

    #[test]
    fn a_sparse_model_lacks_what_the_template_reads() {
        let model = json!({"QueueUrl": "u", "Endpoint": {"Address": "a"}})
            .as_object()
            .unwrap()
            .clone();
        assert!(has_attribute(&model, "QueueUrl"));
        assert!(has_attribute(&model, "Endpoint.Address"));
        assert!(!has_attribute(&model, "Arn"));
        assert!(!has_attribute(&model, "Endpoint.Port"));
    }

    #[test]
    fn a_failed_event_becomes_an_error_with_its_code() {
        use aws_sdk_cloudcontrol::types::{HandlerErrorCode, Operation};
        let failed = ProgressEvent::builder()
            .operation(Operation::Create)
            .operation_status(OperationStatus::Failed)
            .error_code(HandlerErrorCode::AlreadyExists)
            .status_message("exists")
            .build();
        let error = failure_of("AWS::SQS::Queue", "Queue", &failed).unwrap();
        assert_eq!(error.kind, ErrorKind::ALREADY_EXISTS);
        assert_eq!(error.aws_code(), Some("AlreadyExists"));
        assert!(error
            .message
            .contains("Cloud Control CREATE failed: exists"));
        let done = ProgressEvent::builder()
            .operation_status(OperationStatus::Success)
            .build();
        assert!(failure_of("T", "L", &done).is_none());
    }

    #[test]
    fn nulls_are_stripped_at_every_depth() {
        assert_eq!(
            strip_nulls(&json!({"a": null, "b": {"c": null, "d": 1}, "e": [null, {"f": null}]})),
            json!({"b": {"d": 1}, "e": [null, {}]})
        );
    }
}
