//! Dynamic references (`{{resolve:ssm:…}}`, `{{resolve:ssm-secure:…}}`,
//! `{{resolve:secretsmanager:…}}`) in a real CDK app: AWS gets the values, the state bucket
//! (every version of every object) and cdkd's output get the expressions only; a rotated
//! secret is not a change; `cdkd scrub` repairs a record planted with the plaintext.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{resource_of_type, Emulator};
use serde_json::{json, Value};

const PASSWORD: &str = "s3cr3t-Pa55word-e2e";
const USERNAME: &str = "app-user-e2e";
const GREETING: &str = "hello-from-ssm-v1";
const TOKEN: &str = "tok-0123456789-secure";
const PASSWORD_REF: &str = "{{resolve:secretsmanager:cdkd/test/db:SecretString:password::}}";
const USERNAME_REF: &str = "{{resolve:secretsmanager:cdkd/test/db:SecretString:username::}}";

fn put_secret(password: &str) {
    let value = json!({"username": USERNAME, "password": password}).to_string();
    Emulator::shared().boto(&format!(
        "(lambda sm: sm.put_secret_value(SecretId='cdkd/test/db', SecretString={value:?}) \
         if [s for s in sm.list_secrets()['SecretList'] if s['Name'] == 'cdkd/test/db'] \
         else sm.create_secret(Name='cdkd/test/db', SecretString={value:?}))(c('secretsmanager')) and None"
    ));
}

fn seed() {
    put_secret(PASSWORD);
    Emulator::shared().boto(&format!(
        "[c('ssm').put_parameter(Name='/cdkd/test/greeting', Value='{GREETING}', Type='String', Overwrite=True) if not [p for p in c('ssm').describe_parameters()['Parameters'] if p['Name'] == '/cdkd/test/greeting'] else None, \
          c('ssm').put_parameter(Name='/cdkd/test/token', Value='{TOKEN}', Type='SecureString', Overwrite=True)] and None"
    ));
}

/// Every version of every object in the state bucket, as text.
fn every_stored_body(bucket: &str) -> Vec<String> {
    let bodies = Emulator::shared().boto(&format!(
        "[c('s3').get_object(Bucket='{bucket}', Key=v['Key'], VersionId=v['VersionId'])['Body'].read().decode() \
          for v in c('s3').list_object_versions(Bucket='{bucket}').get('Versions', [])]"
    ));
    bodies
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().to_string())
        .collect()
}

fn assert_no_plaintext(what: &str, text: &str) {
    for secret in [PASSWORD, USERNAME, TOKEN] {
        assert!(
            !text.contains(secret),
            "{what} holds the secret {secret}:\n{text}"
        );
    }
}

fn state(world: &AppWorld) -> Value {
    world
        .cdkd(&["state", "show", "SecretsStack", "--json"])
        .success()
        .json()["state"]
        .clone()
}

#[test]
fn secrets_reach_aws_but_never_the_state_bucket() {
    seed();
    let world = AppWorld::of("secrets", "SecretsStack", "secrets", |_| {});
    let app = world.assembly.path().display().to_string();
    let deploy = world.cdkd(&["deploy", "-a", &app, "--verbose"]).success();
    assert_no_plaintext(
        "deploy's output",
        &format!("{}{}", deploy.stdout, deploy.stderr),
    );

    // AWS got the values: the function's code reads them from its environment.
    let record = state(&world);
    let function = resource_of_type(&record, "AWS::Lambda::Function");
    let name = function["physicalId"].as_str().unwrap();
    let answer = Emulator::shared().boto(&format!(
        "json.loads(c('lambda').invoke(FunctionName='{name}')['Payload'].read())"
    ));
    assert_eq!(
        answer,
        json!({
            "password": PASSWORD,
            "url": format!("postgres://app:{PASSWORD}@db.internal:5432/app"),
            "greeting": GREETING,
            "token": TOKEN,
        })
    );
    // A Cloud Control resource too.
    let copy = Emulator::shared()
        .boto("c('ssm').get_parameter(Name='/cdkd/test/copy')['Parameter']['Value']");
    assert_eq!(copy, json!(USERNAME));

    // The record keeps the expressions, and no version of any object holds a value.
    let variables = &function["properties"]["Environment"]["Variables"];
    assert_eq!(variables["DB_PASSWORD"], json!(PASSWORD_REF));
    assert_eq!(
        variables["DB_URL"],
        json!(format!(
            "postgres://app:{PASSWORD_REF}@db.internal:5432/app"
        ))
    );
    assert_eq!(
        variables["API_TOKEN"],
        json!("{{resolve:ssm-secure:/cdkd/test/token}}")
    );
    assert_eq!(
        record["resources"]["Copy"]["properties"]["Value"],
        json!(USERNAME_REF)
    );
    for body in every_stored_body(&world.bucket) {
        assert_no_plaintext("a stored object", &body);
    }

    // A rotated secret is not a template change (CloudFormation's rule): nothing to deploy.
    put_secret("rotated-Pa55word-e2e");
    let diff = world.cdkd(&["diff", "-a", &app]);
    assert!(!diff.stdout.contains("ReaderF7BF189D"), "{}", diff.stdout);
    world.cdkd(&["deploy", "-a", &app]).success();
    let environment = Emulator::shared().boto(&format!(
        "c('lambda').get_function_configuration(FunctionName='{name}')['Environment']['Variables']['DB_PASSWORD']"
    ));
    assert_eq!(environment, json!(PASSWORD));
    put_secret(PASSWORD);

    // A reference to a missing JSON key fails naming the resource and the reference only.
    world.edit(|template| {
        template["Resources"]["Copy"]["Properties"]["Value"] =
            json!("{{resolve:secretsmanager:cdkd/test/db:SecretString:missing::}}");
    });
    let failed = world.cdkd(&["deploy", "-a", &app]);
    assert_eq!(failed.code, Some(1), "{}{}", failed.stdout, failed.stderr);
    let output = format!("{}{}", failed.stdout, failed.stderr);
    assert!(output.contains("Copy"), "{output}");
    assert!(
        output.contains("{{resolve:secretsmanager:cdkd/test/db:SecretString:missing::}}")
            && output.contains("picks the JSON key 'missing'"),
        "{output}"
    );
    assert_no_plaintext("a failed deploy's output", &output);
    world.edit(|template| {
        template["Resources"]["Copy"]["Properties"]["Value"] = json!(USERNAME_REF);
    });

    // A record written by another tool with the plaintext in it.
    let key = "cdkd/SecretsStack/us-east-1/state.json";
    Emulator::shared().boto(&format!(
        "(lambda s3: s3.put_object(Bucket='{bucket}', Key='{key}', Body=s3.get_object(Bucket='{bucket}', Key='{key}')['Body'].read().decode().replace('{PASSWORD_REF}', '{PASSWORD}').replace('{USERNAME_REF}', '{USERNAME}')))(c('s3')) and None",
        bucket = world.bucket
    ));
    assert!(every_stored_body(&world.bucket)
        .iter()
        .any(|b| b.contains(PASSWORD)));
    let dry = world.cdkd(&["scrub", "-a", &app, "--dry-run"]).success();
    assert!(
        dry.stdout.contains(
            "resource(s) Copy, ReaderF7BF189D held a resolved secret; would be rewritten"
        ),
        "{}",
        dry.stdout
    );
    assert!(
        every_stored_body(&world.bucket)
            .iter()
            .any(|b| b.contains(PASSWORD)),
        "a dry run changes nothing"
    );
    // A CI gate: --fail turns "holds a resolved secret" into exit 1.
    let gate = world.cdkd(&["scrub", "-a", &app, "--dry-run", "--fail"]);
    assert_eq!(gate.code, Some(1), "{}\n{}", gate.stdout, gate.stderr);
    let scrub = world.cdkd(&["scrub", "-a", &app]).success();
    assert!(scrub.stdout.contains("was rewritten"), "{}", scrub.stdout);
    world
        .cdkd(&["scrub", "-a", &app, "--dry-run", "--fail"])
        .success();
    assert_no_plaintext(
        "scrub's output",
        &format!("{}{}", scrub.stdout, scrub.stderr),
    );
    for body in every_stored_body(&world.bucket) {
        assert_no_plaintext("a stored object after scrub", &body);
    }
    let record = state(&world);
    let function = resource_of_type(&record, "AWS::Lambda::Function");
    assert_eq!(
        function["properties"]["Environment"]["Variables"]["DB_URL"],
        json!(format!(
            "postgres://app:{PASSWORD_REF}@db.internal:5432/app"
        ))
    );
    // State history without secrets is kept: earlier clean versions survive.
    let versions = Emulator::shared().boto(&format!(
        "len([v for v in c('s3').list_object_versions(Bucket='{bucket}', Prefix='{key}').get('Versions', []) if v['Key'] == '{key}'])",
        bucket = world.bucket
    ));
    assert!(versions.as_u64().unwrap() >= 2, "{versions}");
    let again = world.cdkd(&["scrub", "-a", &app]).success();
    assert!(again.stdout.contains("clean"), "{}", again.stdout);

    world.cdkd(&["destroy", "-a", &app, "--force"]).success();
}

const DB_PASSWORD: &str = "Pa55-noecho-e2e-1";
const DB_PASSWORD_2: &str = "Pa55-noecho-e2e-2";

fn ssm_value(name: &str) -> Value {
    Emulator::shared().boto(&format!(
        "c('ssm').get_parameter(Name='{name}')['Parameter']['Value']"
    ))
}

/// A `NoEcho` template parameter (issue 43): AWS gets the value, whole and embedded; state
/// (every stored version), `state show`, diff, the printed outputs and `--outputs-file` get the
/// mask; the record keeps a fingerprint that tells a changed value from the same one; a deploy
/// without the value is refused by name.
#[test]
fn a_no_echo_parameter_reaches_aws_but_is_never_written_down() {
    let world = AppWorld::of("noechoparam", "NoEchoParams", "noecho-param", |_| {});
    let app = world.assembly.path().display().to_string();
    let outputs_file = world.echo.path().join("outputs.json");
    let given = format!("DbPassword={DB_PASSWORD}");
    let outputs_arg = outputs_file.display().to_string();
    let deploy = world
        .cdkd(&[
            "deploy",
            "-a",
            &app,
            "--parameters",
            &given,
            "--outputs-file",
            &outputs_arg,
            "--verbose",
        ])
        .success();
    let secrets = [DB_PASSWORD, DB_PASSWORD_2];
    let no_plaintext = |what: &str, text: &str| {
        for secret in secrets {
            assert!(!text.contains(secret), "{what} holds {secret}:\n{text}");
        }
    };
    no_plaintext(
        "deploy's output",
        &format!("{}{}", deploy.stdout, deploy.stderr),
    );
    no_plaintext(
        "the outputs file",
        &std::fs::read_to_string(&outputs_file).unwrap(),
    );
    assert!(deploy.stdout.contains("PasswordOut"), "{}", deploy.stdout);

    // AWS got the value, whole and inside the URL.
    assert_eq!(ssm_value("/cdkd/noecho/password"), json!(DB_PASSWORD));
    assert_eq!(
        ssm_value("/cdkd/noecho/url"),
        json!(format!("postgres://app:{DB_PASSWORD}@db.internal:5432/app"))
    );

    // The record holds the mask where the value was, and a fingerprint.
    let shown = world
        .cdkd(&["state", "show", "NoEchoParams", "--json"])
        .success();
    no_plaintext("state show", &shown.stdout);
    let record = shown.json()["state"].clone();
    let value_of = |ssm_name: &str| {
        let resources = record["resources"].as_object().unwrap();
        let (_, found) = (resources.iter())
            .find(|(_, r)| r["properties"]["Name"] == json!(ssm_name))
            .unwrap_or_else(|| panic!("no record of {ssm_name}: {record}"));
        found["properties"]["Value"].clone()
    };
    assert_eq!(value_of("/cdkd/noecho/password"), json!("***"));
    assert_eq!(
        value_of("/cdkd/noecho/url"),
        json!("postgres://app:***@db.internal:5432/app")
    );
    assert_eq!(value_of("/cdkd/noecho/plain"), json!("not-a-secret"));
    assert_eq!(record["outputs"]["PasswordOut"], json!("***"));
    let fingerprint = record["noEchoParameters"]["DbPassword"].clone();
    assert!(
        fingerprint
            .as_str()
            .unwrap()
            .starts_with("pbkdf2-sha256$600000$"),
        "{record}"
    );
    for body in every_stored_body(&world.bucket) {
        no_plaintext("a stored object", &body);
    }

    // The same value: nothing to change. Another one: exactly the resources that receive it.
    let same = world
        .cdkd(&["diff", "-a", &app, "--parameters", &given])
        .success();
    assert!(!same.stdout.contains("/cdkd/noecho"), "{}", same.stdout);
    let other = format!("DbPassword={DB_PASSWORD_2}");
    let changed = world.cdkd(&["diff", "-a", &app, "--parameters", &other]);
    let text = format!("{}{}", changed.stdout, changed.stderr);
    no_plaintext("diff's output", &text);
    assert!(text.contains("Password") && text.contains("Url"), "{text}");
    assert!(!text.contains("Plain"), "{text}");

    let again = world
        .cdkd(&["deploy", "-a", &app, "--parameters", &other])
        .success();
    no_plaintext(
        "the second deploy's output",
        &format!("{}{}", again.stdout, again.stderr),
    );
    assert_eq!(ssm_value("/cdkd/noecho/password"), json!(DB_PASSWORD_2));
    assert_eq!(
        ssm_value("/cdkd/noecho/url"),
        json!(format!(
            "postgres://app:{DB_PASSWORD_2}@db.internal:5432/app"
        ))
    );
    let record = world
        .cdkd(&["state", "show", "NoEchoParams", "--json"])
        .success()
        .json();
    assert_ne!(
        record["state"]["noEchoParameters"]["DbPassword"],
        fingerprint
    );
    for body in every_stored_body(&world.bucket) {
        no_plaintext("a stored object", &body);
    }

    // Without the value: refused, by name, nothing changed.
    let missing = world.cdkd(&["deploy", "-a", &app]);
    assert_eq!(
        missing.code,
        Some(1),
        "{}{}",
        missing.stdout,
        missing.stderr
    );
    assert!(
        missing.stderr.contains("DbPassword") && missing.stderr.contains("NoEcho"),
        "{}",
        missing.stderr
    );
    assert_eq!(ssm_value("/cdkd/noecho/password"), json!(DB_PASSWORD_2));

    // An AWS error that quotes what was sent shows the mask.
    world.edit(|template| {
        let resources = template["Resources"].as_object_mut().unwrap();
        let plain = (resources.values_mut())
            .find(|r| r["Properties"]["Name"] == json!("/cdkd/noecho/plain"))
            .unwrap();
        plain["Properties"]["DataType"] = json!({"Ref": "DbPassword"});
    });
    let failed = world.cdkd(&["deploy", "-a", &app, "--parameters", &other]);
    assert_eq!(failed.code, Some(1), "{}{}", failed.stdout, failed.stderr);
    let text = format!("{}{}", failed.stdout, failed.stderr);
    no_plaintext("a failed deploy's output", &text);
    assert!(text.contains("data type is not supported: ***"), "{text}");
}

/// Text from a template that comes back in an AWS error is printed with its control sequences
/// escaped (issue 43): a terminal title (OSC), a screen clear and a bell never reach the
/// terminal raw, on stdout (events) or stderr (the error, the log).
#[test]
fn control_sequences_from_templates_and_aws_are_printed_escaped() {
    let world = AppWorld::of("noechoparam", "NoEchoParams", "escapes", |template| {
        let resources = template["Resources"].as_object_mut().unwrap();
        // Names of their own: the NoEcho test deploys the same fixture beside this one.
        for resource in resources.values_mut() {
            if let Some(Value::String(name)) = resource["Properties"].get_mut("Name") {
                name.push_str("-escapes");
            }
        }
        let plain = (resources.values_mut())
            .find(|r| r["Properties"]["Name"] == json!("/cdkd/noecho/plain-escapes"))
            .unwrap();
        plain["Properties"]["DataType"] = json!("\u{1b}]0;pwned\u{7}\u{1b}[2J");
    });
    let app = world.assembly.path().display().to_string();
    let failed = world.cdkd(&[
        "deploy",
        "-a",
        &app,
        "--parameters",
        "DbPassword=x1y2z3w4",
        "-v",
    ]);
    assert_eq!(failed.code, Some(1), "{}{}", failed.stdout, failed.stderr);
    for (stream, text) in [("stdout", &failed.stdout), ("stderr", &failed.stderr)] {
        assert!(
            !text.contains('\u{7}') && !text.contains("\u{1b}]"),
            "{stream}: {text:?}"
        );
        assert!(!text.contains("\u{1b}[2J"), "{stream}: {text:?}");
    }
    assert!(
        failed.stderr.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
        "{}",
        failed.stderr
    );
}
