use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::provisioning::operations::CreateSpec;

use super::*;

/// Secrets in a map; every fetch is counted.
#[derive(Default)]
struct Vault {
    parameters: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
    fetches: Mutex<Vec<String>>,
}

#[async_trait]
impl SecretSource for Arc<Vault> {
    async fn parameter(
        &self,
        name: &str,
        version: Option<&str>,
        decrypt: bool,
    ) -> Result<String, FetchError> {
        let key = format!(
            "{name}{}{}",
            version.map(|v| format!(":{v}")).unwrap_or_default(),
            if decrypt { "!" } else { "" }
        );
        self.fetches.lock().unwrap().push(key.clone());
        self.parameters
            .get(&key)
            .cloned()
            .ok_or_else(|| FetchError::Call("ParameterNotFound".into()))
    }

    async fn secret(
        &self,
        secret_id: &str,
        stage: Option<&str>,
        id: Option<&str>,
    ) -> Result<String, FetchError> {
        self.fetches.lock().unwrap().push(secret_id.to_string());
        assert_eq!((stage, id), (None, None));
        self.secrets
            .get(secret_id)
            .cloned()
            .ok_or_else(|| FetchError::Call("ResourceNotFoundException".into()))
    }
}

fn vault() -> Arc<Vault> {
    Arc::new(Vault {
        parameters: [
            ("/app/greeting:1".to_string(), "hello".to_string()),
            ("/app/token!".to_string(), "tok-123456".to_string()),
        ]
        .into(),
        secrets: [(
            "db".to_string(),
            r#"{"password":"hunter2-long","port":5432}"#.to_string(),
        )]
        .into(),
        fetches: Mutex::default(),
    })
}

/// A provider that echoes what it was sent as attributes, and records it.
#[derive(Default)]
struct Echo {
    sent: Mutex<Vec<Map<String, Value>>>,
    fail: bool,
}

#[async_trait]
impl ResourceOperations for Echo {
    fn label(&self) -> String {
        "echo".into()
    }
    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError> {
        let CreateCall { properties, .. } = call;
        self.sent.lock().unwrap().push(properties.clone());
        if self.fail {
            return Err(ProviderError::new(
                ErrorKind::VALIDATION,
                format!("bad request: {}", Value::Object(properties.clone())),
            ));
        }
        Ok(CreateResult {
            physical_id: "id-1".into(),
            attributes: properties.clone(),
            ..Default::default()
        })
    }
    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError> {
        let UpdateCall {
            physical_id: id,
            desired,
            ..
        } = call;
        self.sent.lock().unwrap().push(desired.clone());
        Ok(UpdateResult {
            physical_id: id.into(),
            attributes: desired.clone(),
            ..Default::default()
        })
    }
    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError> {
        let DeleteCall { properties, .. } = call;
        self.sent.lock().unwrap().push(properties.clone());
        Ok(DeleteResult::Deleted)
    }
    async fn read_current_state(&self, call: ReadCall<'_>) -> Result<Observation, ProviderError> {
        let ReadCall { properties, .. } = call;
        Ok(Observation::Live(properties.clone()))
    }
}

fn spec_ids() -> AccountIds {
    AccountIds {
        account: "123456789012".into(),
        partition: "aws".into(),
    }
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn template_properties() -> Map<String, Value> {
    object(json!({
        "Environment": {"Variables": {
            "PASSWORD": "{{resolve:secretsmanager:db:SecretString:password::}}",
            "URL": "postgres://app:{{resolve:secretsmanager:db:SecretString:password::}}@db:{{resolve:secretsmanager:db:SecretString:port::}}/app",
            "GREETING": "{{resolve:ssm:/app/greeting:1}}",
            "TOKEN": "{{resolve:ssm-secure:/app/token}}",
        }},
        "Plain": "nothing to see",
        "Tags": [{"Key": "k", "Value": "{{resolve:ssm:/app/greeting:1}}"}],
    }))
}

#[test]
fn parses_the_three_services_and_their_optional_parts() {
    assert_eq!(
        DynamicReference::parse("ssm:/a/b:3").unwrap(),
        DynamicReference::Parameter {
            name: "/a/b".into(),
            version: Some("3".into()),
            secure: false
        }
    );
    assert_eq!(
        DynamicReference::parse("ssm-secure:/a/b").unwrap(),
        DynamicReference::Parameter {
            name: "/a/b".into(),
            version: None,
            secure: true
        }
    );
    assert_eq!(
        DynamicReference::parse("secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf:SecretString:password:AWSPREVIOUS:").unwrap(),
        DynamicReference::Secret {
            secret_id: "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf".into(),
            json_key: Some("password".into()),
            version_stage: Some("AWSPREVIOUS".into()),
            version_id: None,
        }
    );
    assert_eq!(
        DynamicReference::parse("secretsmanager:db").unwrap(),
        DynamicReference::Secret {
            secret_id: "db".into(),
            json_key: None,
            version_stage: None,
            version_id: None
        }
    );
    assert_eq!(
        DynamicReference::parse("secretsmanager:db:SecretBinary").unwrap_err(),
        ReferenceError::NotSecretString("SecretBinary".into())
    );
    let unknown = DynamicReference::parse("vault:x").unwrap_err();
    assert_eq!(unknown, ReferenceError::UnknownService("vault".into()));
    // The advice is what the user reads.
    assert_eq!(
        unknown.to_string(),
        "uses the unknown service 'vault' (write ssm:, ssm-secure: or secretsmanager:)"
    );
    assert_eq!(
        DynamicReference::parse("secretsmanager:db:SecretString:k:AWSCURRENT:v1").unwrap_err(),
        ReferenceError::StageAndVersion
    );
    for (body, problem) in [
        ("ssm", ReferenceError::NoService),
        ("ssm:", ReferenceError::NoParameter),
        ("secretsmanager:", ReferenceError::NoSecret),
    ] {
        assert_eq!(
            DynamicReference::parse(body).unwrap_err(),
            problem,
            "{body}"
        );
    }
    assert_eq!(
        expressions("a{{resolve:ssm:x}}b{{resolve:ssm:y:2}}"),
        vec!["{{resolve:ssm:x}}", "{{resolve:ssm:y:2}}"]
    );
}

#[tokio::test]
async fn the_provider_gets_plaintext_and_everything_returned_gets_the_expressions() {
    let vault = vault();
    let references = Arc::new(DynamicReferences::new(Box::new(vault.clone())));
    let provider = Resolving::new(Echo::default(), references);
    let properties = template_properties();
    let spec = CreateSpec {
        token: "t",
        name: None,
        needed: &[],
        ids: &spec_ids(),
    };
    let result = provider
        .create(CreateCall {
            resource_type: "AWS::Lambda::Function",
            logical_id: "Fn",
            stack: "S",
            properties: &properties,
            spec: &spec,
        })
        .await
        .unwrap();

    let sent = provider.inner.sent.lock().unwrap()[0].clone();
    assert_eq!(
        sent["Environment"]["Variables"],
        json!({"PASSWORD": "hunter2-long", "URL": "postgres://app:hunter2-long@db:5432/app", "GREETING": "hello", "TOKEN": "tok-123456"})
    );
    assert_eq!(sent["Tags"][0]["Value"], "hello");
    assert_eq!(sent["Plain"], "nothing to see");
    // The echoed attributes are back to the template's expressions, byte for byte.
    assert_eq!(result.attributes, properties);
    // One fetch per distinct reference, however often it is used.
    let fetches = vault.fetches.lock().unwrap().clone();
    assert_eq!(
        fetches.iter().filter(|f| *f == "db").count(),
        2,
        "{fetches:?}"
    );
    assert_eq!(fetches.len(), 4, "{fetches:?}");
}

#[tokio::test]
async fn errors_and_read_back_state_never_carry_the_plaintext() {
    let references = Arc::new(DynamicReferences::new(Box::new(vault())));
    let provider = Resolving::new(
        Echo {
            fail: true,
            ..Echo::default()
        },
        references,
    );
    let spec = CreateSpec {
        token: "t",
        name: None,
        needed: &[],
        ids: &spec_ids(),
    };
    let err = provider
        .create(CreateCall {
            resource_type: "T",
            logical_id: "Fn",
            stack: "S",
            properties: &template_properties(),
            spec: &spec,
        })
        .await
        .unwrap_err();
    assert!(!err.message.contains("hunter2-long"), "{}", err.message);
    assert!(!err.message.contains("tok-123456"), "{}", err.message);
    assert!(
        err.message.contains("{{resolve:ssm-secure:/app/token}}"),
        "{}",
        err.message
    );

    let live = provider
        .read_current_state(ReadCall {
            resource_type: "T",
            logical_id: "Fn",
            physical_id: "id",
            properties: &template_properties(),
        })
        .await
        .unwrap();
    assert_eq!(live, Observation::Live(template_properties()));
}

#[tokio::test]
async fn a_missing_secret_or_key_names_the_resource_and_reference() {
    let references = Arc::new(DynamicReferences::new(Box::new(vault())));
    let provider = Resolving::new(Echo::default(), references);
    let spec = CreateSpec {
        token: "t",
        name: None,
        needed: &[],
        ids: &spec_ids(),
    };
    for (reference, expected) in [
        (
            "{{resolve:secretsmanager:nope}}",
            "cannot read the secret: ResourceNotFoundException",
        ),
        (
            "{{resolve:secretsmanager:db:SecretString:user::}}",
            "picks the JSON key 'user', which the secret does not have",
        ),
        (
            "{{resolve:ssm:/app/missing}}",
            "cannot read the SSM parameter: ParameterNotFound",
        ),
        ("x{{resolve:ssm:/app/greeting:1", "is not closed"),
    ] {
        let properties = object(json!({"Value": reference}));
        let err = provider
            .create(CreateCall {
                resource_type: "T",
                logical_id: "Param",
                stack: "S",
                properties: &properties,
                spec: &spec,
            })
            .await
            .unwrap_err();
        assert!(
            err.message
                .starts_with("Param: the dynamic reference {{resolve:"),
            "{}",
            err.message
        );
        assert!(err.message.contains(expected), "{}", err.message);
        assert!(!err.message.contains("hunter2"), "{}", err.message);
    }
    assert!(
        provider.inner.sent.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn a_delete_whose_secret_is_gone_still_runs() {
    let references = Arc::new(DynamicReferences::new(Box::new(vault())));
    let provider = Resolving::new(Echo::default(), references);
    let properties = object(json!({"Value": "{{resolve:secretsmanager:deleted-first}}"}));
    provider
        .delete(DeleteCall {
            resource_type: "T",
            logical_id: "Param",
            physical_id: "id",
            properties: &properties,
        })
        .await
        .unwrap();
    assert_eq!(provider.inner.sent.lock().unwrap()[0], properties);
}

#[test]
fn a_json_key_is_picked_from_a_json_secret_string_only() {
    let document = r#"{"password":"p","port":5432}"#;
    assert_eq!(json_field(document, "password").unwrap(), "p");
    assert_eq!(json_field(document, "port").unwrap(), "5432");
    assert_eq!(
        json_field(document, "user").unwrap_err(),
        ReferenceError::NoSuchKey("user".into())
    );
    assert_eq!(
        json_field("plain", "password").unwrap_err(),
        ReferenceError::NotJson("password".into())
    );
    assert_eq!(
        ReferenceError::NotClosed.to_string(),
        "is not closed with }}"
    );
}

#[test]
fn short_secrets_are_replaced_only_as_whole_values() {
    let resolution = Resolution {
        properties: Map::new(),
        strings: vec![],
        secrets: vec![("ab".into(), "{{resolve:ssm:x}}".into())],
    };
    assert_eq!(
        resolution.scrub_text("ab").as_deref(),
        Some("{{resolve:ssm:x}}")
    );
    assert_eq!(resolution.scrub_text("arn:aws:lab"), None);
}
