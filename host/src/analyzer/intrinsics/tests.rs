use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::analyzer::template::Template;
use crate::aws_env::{partition as partition_of, url_suffix as url_suffix_of};

/// Resources `Done*` exist (Ref = lowercased id, attributes `Arn` and list `Zones`);
/// `Pending` is not created yet.
struct FakeEnv {
    region: &'static str,
}

impl Environment for FakeEnv {
    fn pseudo(&self, name: &str) -> Option<Value> {
        Some(match name {
            "AWS::Region" => json!(self.region),
            "AWS::AccountId" => json!("123456789012"),
            "AWS::Partition" => json!(partition_of(self.region)),
            "AWS::URLSuffix" => json!(url_suffix_of(self.region)),
            "AWS::StackName" => json!("Demo"),
            "AWS::StackId" => json!(format!(
                "arn:{}:cloudformation:{}:123456789012:stack/Demo/cdkd",
                partition_of(self.region),
                self.region
            )),
            "AWS::NotificationARNs" => json!([]),
            _ => return None,
        })
    }
    fn resource_ref(&self, logical_id: &str) -> Lookup {
        if logical_id.starts_with("Done") {
            Lookup::Known(json!(logical_id.to_lowercase()))
        } else {
            Lookup::Unknown
        }
    }
    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup {
        match (logical_id.starts_with("Done"), attribute) {
            (true, "Arn") => {
                Lookup::Known(json!(format!("arn:aws:x:::{}", logical_id.to_lowercase())))
            }
            (true, "Zones") => Lookup::Known(json!(["a", "b"])),
            (true, other) => Lookup::Missing(format!("{logical_id} has no attribute {other}")),
            (false, _) => Lookup::Unknown,
        }
    }
    fn import_value(&self, export_name: &str) -> Lookup {
        if export_name == "Shared-VpcId" {
            Lookup::Known(json!("vpc-123"))
        } else {
            Lookup::Missing(format!("no stack exports {export_name}"))
        }
    }
    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup {
        Lookup::Known(json!(format!(
            "{stack}/{}/{output}",
            region.unwrap_or(self.region)
        )))
    }
    fn stack_output_as(
        &self,
        role_arn: &str,
        stack: &str,
        region: Option<&str>,
        output: &str,
    ) -> Lookup {
        Lookup::Known(json!(format!(
            "{role_arn}:{stack}/{}/{output}",
            region.unwrap_or(self.region)
        )))
    }
    fn availability_zones(&self, region: &str) -> Lookup {
        Lookup::Known(json!([
            format!("{region}a"),
            format!("{region}b"),
            format!("{region}c")
        ]))
    }
}

fn template() -> Template {
    Template::parse(&json!({
        "Parameters": {
            "Env": {"Type": "String", "Default": "prod"},
            "Subnets": {"Type": "CommaDelimitedList", "Default": "subnet-1, subnet-2"},
            "Size": {"Type": "Number", "Default": 3}
        },
        "Mappings": {"Regions": {"us-east-1": {"Ami": "ami-1"}}},
        "Conditions": {
            "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
            "IsDev": {"Fn::Not": [{"Condition": "IsProd"}]},
            "Both": {"Fn::And": [{"Condition": "IsProd"}, {"Fn::Equals": ["1", 1]}]},
            "Either": {"Fn::Or": [{"Condition": "IsDev"}, {"Condition": "IsProd"}]},
            "Loop": {"Fn::Not": [{"Condition": "Loop"}]}
        },
        "Resources": {
            "DoneBucket": {"Type": "AWS::S3::Bucket"},
            "Pending": {"Type": "AWS::SQS::Queue"}
        }
    }))
    .unwrap()
}

fn resolve(value: Value) -> Result<Value, ResolveError> {
    resolve_in("us-east-1", value)
}

fn resolve_in(region: &'static str, value: Value) -> Result<Value, ResolveError> {
    let template = template();
    let env = FakeEnv { region };
    let resolver = Resolver::new(&template, &env, &BTreeMap::new()).unwrap();
    resolver.resolve(&value, "Resources.X.Properties.P")
}

#[test]
fn pseudo_parameters() {
    assert_eq!(
        resolve(json!({"Ref": "AWS::AccountId"})).unwrap(),
        json!("123456789012")
    );
    assert_eq!(
        resolve(json!({"Ref": "AWS::Region"})).unwrap(),
        json!("us-east-1")
    );
    assert_eq!(
        resolve(json!({"Ref": "AWS::StackName"})).unwrap(),
        json!("Demo")
    );
    assert_eq!(
        resolve(json!({"Ref": "AWS::NotificationARNs"})).unwrap(),
        json!([])
    );
    assert_eq!(
        resolve_in("cn-north-1", json!({"Ref": "AWS::Partition"})).unwrap(),
        json!("aws-cn")
    );
    assert_eq!(
        resolve_in("cn-north-1", json!({"Ref": "AWS::URLSuffix"})).unwrap(),
        json!("amazonaws.com.cn")
    );
    assert_eq!(
        resolve_in("us-gov-west-1", json!({"Ref": "AWS::Partition"})).unwrap(),
        json!("aws-us-gov")
    );
    assert!(resolve(json!({"Ref": "AWS::StackId"}))
        .unwrap()
        .as_str()
        .unwrap()
        .starts_with("arn:aws:cloudformation:us-east-1:123456789012:stack/Demo/"));
    let err = resolve(json!({"Ref": "AWS::Nope"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Resources.X.Properties.P.Ref: unknown pseudo parameter AWS::Nope"
    );
}

#[test]
fn parameters_keep_their_types() {
    assert_eq!(resolve(json!({"Ref": "Env"})).unwrap(), json!("prod"));
    assert_eq!(
        resolve(json!({"Ref": "Subnets"})).unwrap(),
        json!(["subnet-1", "subnet-2"])
    );
    assert_eq!(resolve(json!({"Ref": "Size"})).unwrap(), json!("3"));
}

#[test]
fn resource_refs_and_attributes_known_and_unknown() {
    assert_eq!(
        resolve(json!({"Ref": "DoneBucket"})).unwrap(),
        json!("donebucket")
    );
    assert_eq!(
        resolve(json!({"Ref": "Pending"})).unwrap(),
        unknown("Pending")
    );
    assert_eq!(
        resolve(json!({"Fn::GetAtt": ["DoneBucket", "Arn"]})).unwrap(),
        json!("arn:aws:x:::donebucket")
    );
    assert_eq!(
        resolve(json!({"Fn::GetAtt": "DoneBucket.Arn"})).unwrap(),
        json!("arn:aws:x:::donebucket")
    );
    assert_eq!(
        resolve(json!({"Fn::GetAtt": ["DoneBucket", "Zones"]})).unwrap(),
        json!(["a", "b"]),
        "a list stays a list"
    );
    assert_eq!(
        resolve(json!({"Fn::GetAtt": ["Pending", "Arn"]})).unwrap(),
        unknown("Pending.Arn")
    );
    let err = resolve(json!({"Fn::GetAtt": ["Ghost", "Arn"]})).unwrap_err();
    assert!(
        err.message.contains("Ghost, which is not a resource"),
        "{err}"
    );
    let err = resolve(json!({"Fn::GetAtt": ["DoneBucket", "Nope"]})).unwrap_err();
    assert_eq!(err.message, "DoneBucket has no attribute Nope");
}

#[test]
fn no_value_removes_keys_and_list_items() {
    let value = resolve(json!({
        "Keep": 1,
        "Drop": {"Ref": "AWS::NoValue"},
        "List": ["a", {"Fn::If": ["IsDev", "b", {"Ref": "AWS::NoValue"}]}, "c"]
    }))
    .unwrap();
    assert_eq!(value, json!({"Keep": 1, "List": ["a", "c"]}));
}

#[test]
fn join_sub_select_split() {
    assert_eq!(
        resolve(json!({"Fn::Join": ["-", ["a", {"Ref": "Env"}, 3]]})).unwrap(),
        json!("a-prod-3")
    );
    assert_eq!(
        resolve(json!({"Fn::Join": [",", {"Ref": "Subnets"}]})).unwrap(),
        json!("subnet-1,subnet-2")
    );
    assert_eq!(
        resolve(json!({"Fn::Join": ["", ["x", {"Ref": "Pending"}]]})).unwrap(),
        unknown("Fn::Join")
    );
    assert_eq!(
        resolve(json!({"Fn::Sub": "arn:${AWS::Partition}:s3:::${DoneBucket}/${Env}/${!Literal}/${DoneBucket.Arn}"})).unwrap(),
        json!("arn:aws:s3:::donebucket/prod/${Literal}/arn:aws:x:::donebucket")
    );
    assert_eq!(
        resolve(
            json!({"Fn::Sub": ["${Name}-${AWS::Region}", {"Name": {"Fn::Join": ["", ["a", "b"]]}}]})
        )
        .unwrap(),
        json!("ab-us-east-1")
    );
    // The list pseudo parameter is joined, as CloudFormation does (empty without topics).
    assert_eq!(
        resolve(json!({"Fn::Sub": "topics=[${AWS::NotificationARNs}]"})).unwrap(),
        json!("topics=[]")
    );
    assert_eq!(
        resolve(json!({"Fn::Sub": "q-${Pending.Arn}"})).unwrap(),
        unknown("Fn::Sub")
    );
    assert_eq!(
        resolve(json!({"Fn::Select": [1, ["a", "b"]]})).unwrap(),
        json!("b")
    );
    assert_eq!(
        resolve(json!({"Fn::Select": ["0", {"Ref": "Subnets"}]})).unwrap(),
        json!("subnet-1")
    );
    assert!(resolve(json!({"Fn::Select": [5, ["a"]]}))
        .unwrap_err()
        .message
        .contains("out of range"));
    assert_eq!(
        resolve(json!({"Fn::Split": [",", "a,b,,c"]})).unwrap(),
        json!(["a", "b", "", "c"])
    );
    assert_eq!(
        resolve(json!({"Fn::Select": [2, {"Fn::Split": ["|", "1|2|3"]}]})).unwrap(),
        json!("3")
    );
}

#[test]
fn conditions() {
    assert_eq!(
        resolve(json!({"Fn::If": ["IsProd", "big", "small"]})).unwrap(),
        json!("big")
    );
    assert_eq!(
        resolve(json!({"Fn::If": ["IsDev", "big", "small"]})).unwrap(),
        json!("small")
    );
    assert_eq!(
        resolve(json!({"Fn::If": ["Both", 1, 2]})).unwrap(),
        json!(1)
    );
    assert_eq!(
        resolve(json!({"Fn::If": ["Either", 1, 2]})).unwrap(),
        json!(1)
    );
    assert_eq!(
        resolve(json!({"Condition": "IsDev"})).unwrap(),
        json!(false)
    );
    assert_eq!(
        resolve(json!({"Fn::Equals": [{"Ref": "Env"}, "dev"]})).unwrap(),
        json!(false)
    );
    assert!(resolve(json!({"Fn::If": ["Loop", 1, 2]}))
        .unwrap_err()
        .message
        .contains("defined in terms of itself"));
    assert!(resolve(json!({"Fn::If": ["Nope", 1, 2]}))
        .unwrap_err()
        .to_string()
        .starts_with("Conditions.Nope"));
}

#[test]
fn cross_stack_mappings_encoding_azs_and_cidr() {
    assert_eq!(
        resolve(json!({"Fn::ImportValue": "Shared-VpcId"})).unwrap(),
        json!("vpc-123")
    );
    assert!(resolve(json!({"Fn::ImportValue": "Nope"}))
        .unwrap_err()
        .message
        .contains("no stack exports Nope"));
    assert_eq!(
        resolve(json!({"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Out"}}))
            .unwrap(),
        json!("Producer/us-east-1/Out")
    );
    assert_eq!(
        resolve(json!({"Fn::GetStackOutput": {"StackName": "Producer", "Region": "eu-west-1", "OutputName": "Out"}})).unwrap(),
        json!("Producer/eu-west-1/Out")
    );
    assert!(resolve(json!({"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O", "RoleArn": {"Ref": "Env"}}}))
        .unwrap_err()
        .message
        .contains("literal"));
    // A literal RoleArn reads through the role (the other account's stack).
    assert_eq!(
        resolve(
            json!({"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O",
            "RoleArn": "arn:aws:iam::222222222222:role/Reader"}})
        )
        .unwrap(),
        json!("arn:aws:iam::222222222222:role/Reader:P/us-east-1/O")
    );
    assert_eq!(
        resolve(json!({"Fn::FindInMap": ["Regions", {"Ref": "AWS::Region"}, "Ami"]})).unwrap(),
        json!("ami-1")
    );
    assert_eq!(
        resolve(
            json!({"Fn::FindInMap": ["Regions", "eu-west-1", "Ami", {"DefaultValue": "ami-x"}]})
        )
        .unwrap(),
        json!("ami-x")
    );
    assert!(
        resolve(json!({"Fn::FindInMap": ["Regions", "eu-west-1", "Ami"]}))
            .unwrap_err()
            .message
            .contains("Mappings has no Regions.eu-west-1.Ami")
    );
    assert_eq!(
        resolve(json!({"Fn::Base64": "Hello, cdkd!"})).unwrap(),
        json!("SGVsbG8sIGNka2Qh")
    );
    assert_eq!(resolve(json!({"Fn::Base64": "ab"})).unwrap(), json!("YWI="));
    assert_eq!(
        resolve(json!({"Fn::GetAZs": ""})).unwrap(),
        json!(["us-east-1a", "us-east-1b", "us-east-1c"])
    );
    assert_eq!(
        resolve(json!({"Fn::Select": [0, {"Fn::GetAZs": "eu-west-1"}]})).unwrap(),
        json!("eu-west-1a")
    );
    // The CloudFormation documentation's examples.
    assert_eq!(
        resolve(json!({"Fn::Cidr": ["192.168.0.0/24", 6, 5]})).unwrap(),
        json!([
            "192.168.0.0/27",
            "192.168.0.32/27",
            "192.168.0.64/27",
            "192.168.0.96/27",
            "192.168.0.128/27",
            "192.168.0.160/27"
        ])
    );
    assert_eq!(
        resolve(json!({"Fn::Cidr": ["10.0.0.0/16", "2", "8"]})).unwrap(),
        json!(["10.0.0.0/24", "10.0.1.0/24"])
    );
    assert_eq!(
        resolve(json!({"Fn::Cidr": ["2001:db8::/56", 2, 64]})).unwrap(),
        json!(["2001:db8::/64", "2001:db8:0:1::/64"])
    );
    assert!(resolve(json!({"Fn::Cidr": ["10.0.0.0/24", 9, 5]}))
        .unwrap_err()
        .message
        .contains("holds only 8"));
}

#[test]
fn an_unknown_intrinsic_names_the_path() {
    let template = Template::parse(
        &json!({"Resources": {"Fn": {"Type": "AWS::Lambda::Function", "Properties": {
            "Environment": {"Variables": {"X": {"Fn::Transmogrify": ["a"]}}}
        }}}}),
    )
    .unwrap();
    let env = FakeEnv {
        region: "us-east-1",
    };
    let resolver = Resolver::new(&template, &env, &BTreeMap::new()).unwrap();
    let err = resolver
        .resolve_properties("Fn", &template.resources["Fn"].properties)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Resources.Fn.Properties.Environment.Variables.X.Fn::Transmogrify: Fn::Transmogrify is not an intrinsic function cdkd supports"
    );
}

#[test]
fn references_follow_taken_branches_only() {
    let template = Template::parse(&json!({
        "Parameters": {"Env": {"Type": "String", "Default": "prod"}},
        "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}},
        "Resources": {
            "A": {"Type": "T"}, "B": {"Type": "T"}, "C": {"Type": "T"}, "D": {"Type": "T"},
            "User": {"Type": "T", "Properties": {
                "X": {"Fn::If": ["IsProd", {"Ref": "A"}, {"Ref": "B"}]},
                "Y": {"Fn::Sub": ["${C.Arn}-${Env}-${V}-${!D}", {"V": {"Ref": "AWS::Region"}}]}
            }}
        }
    }))
    .unwrap();
    let env = FakeEnv {
        region: "us-east-1",
    };
    let resolver = Resolver::new(&template, &env, &BTreeMap::new()).unwrap();
    let mut found = std::collections::BTreeSet::new();
    resolver
        .references(
            &Value::Object(template.resources["User"].properties.clone()),
            "Resources.User.Properties",
            &mut found,
        )
        .unwrap();
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["A", "C"]);
}

/// A seeded generator of template-shaped JSON, mixing intrinsics in every position.
struct Chaos(u64);

impl Chaos {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn value(&mut self, depth: u32) -> Value {
        if depth == 0 {
            return match self.next() % 5 {
                0 => json!(self.pick(&[
                    "a",
                    "",
                    "${DoneBucket}",
                    "${!x}",
                    "${",
                    "10.0.0.0/16",
                    "prod"
                ])),
                1 => json!(self.next() % 7),
                2 => json!(self.next().is_multiple_of(2)),
                3 => Value::Null,
                _ => {
                    json!({"Ref": self.pick(&["Env", "DoneBucket", "Pending", "AWS::Region", "AWS::NoValue", "Ghost"])})
                }
            };
        }
        let name = self.pick(&[
            "Ref",
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
            "Condition",
            "Fn::ImportValue",
            "Fn::GetStackOutput",
            "Fn::FindInMap",
            "Fn::Base64",
            "Fn::GetAZs",
            "Fn::Cidr",
            "Fn::Bogus",
            "list",
            "object",
        ]);
        let argument = match self.next() % 3 {
            0 => self.value(depth - 1),
            1 => Value::Array(
                (0..self.next() % 4)
                    .map(|_| self.value(depth - 1))
                    .collect(),
            ),
            _ => {
                json!({"StackName": self.value(depth - 1), "OutputName": "O", "DefaultValue": self.value(depth - 1)})
            }
        };
        match name {
            "list" => argument,
            "object" => json!({"K": argument, "L": self.value(depth - 1)}),
            other => json!({ other: argument }),
        }
    }
}

#[test]
fn random_inputs_never_panic_and_errors_name_a_path() {
    let env = FakeEnv {
        region: "us-east-1",
    };
    let template = template();
    for seed in 1..3_000u64 {
        let mut chaos = Chaos(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let value = chaos.value(4);
        let resolver = Resolver::new(&template, &env, &BTreeMap::new()).unwrap();
        if let Err(err) = resolver.resolve(&value, "Resources.R.Properties.P") {
            assert!(
                err.path.starts_with("Resources.R.Properties.P")
                    || err.path.starts_with("Conditions."),
                "seed {seed}: error without a path: {err}"
            );
            assert!(!err.message.is_empty(), "seed {seed}");
        }
        let mut found = std::collections::BTreeSet::new();
        let _ = resolver.references(&value, "Resources.R.Properties.P", &mut found);
        // Templates of random shape must fail cleanly too.
        let _ = Template::parse(
            &json!({"Resources": {"R": {"Type": value.clone(), "Properties": value.clone(), "DependsOn": value}}}),
        );
    }
}

#[test]
fn cidr_refusals_are_typed() {
    assert_eq!(
        cidr("10.0.0.0", 1, 8),
        Err(CidrError::NotABlock("10.0.0.0".into()))
    );
    assert_eq!(cidr("10.0.0.0/16", 0, 8), Err(CidrError::Count(0)));
    assert_eq!(
        cidr("10.0.0.0/24", 1, 9),
        Err(CidrError::CannotCarve {
            block: "10.0.0.0/24".into(),
            prefix: 23
        })
    );
    let too_few = cidr("10.0.0.0/24", 9, 5).unwrap_err();
    assert_eq!(
        too_few,
        CidrError::TooFew {
            block: "10.0.0.0/24".into(),
            available: 8,
            prefix: 27,
            count: 9
        }
    );
    assert_eq!(
        too_few.to_string(),
        "10.0.0.0/24 holds only 8 /27 blocks, 9 asked"
    );
}

/// `C0` names `C1`, which names `C2`, … up to `C{length - 1}`, which is true.
fn condition_chain(length: usize) -> Template {
    let mut conditions = serde_json::Map::new();
    for i in 0..length {
        let next = if i + 1 == length {
            json!({"Fn::Equals": ["a", "a"]})
        } else {
            json!({"Fn::Not": [{"Fn::Not": [{"Condition": format!("C{}", i + 1)}]}]})
        };
        conditions.insert(format!("C{i}"), next);
    }
    Template::parse(&json!({"Conditions": conditions, "Resources": {}})).unwrap()
}

#[test]
fn a_long_chain_of_conditions_is_refused_by_name_not_by_a_stack_overflow() {
    let env = FakeEnv {
        region: "us-east-1",
    };
    let short = condition_chain(20);
    let resolver = Resolver::new(&short, &env, &BTreeMap::new()).unwrap();
    assert!(resolver.condition("C0").unwrap());
    let long = condition_chain(5000);
    let resolver = Resolver::new(&long, &env, &BTreeMap::new()).unwrap();
    let err = resolver.condition("C0").unwrap_err().to_string();
    assert!(err.contains("Conditions.C32"), "{err}");
    assert!(err.contains("chain of more than 32 conditions"), "{err}");
}

#[test]
fn deeply_nested_functions_are_refused_by_path_not_by_a_stack_overflow() {
    let env = FakeEnv {
        region: "us-east-1",
    };
    // As deep as serde_json reads (128), through 32 chained conditions: refused, not a crash.
    let mut conditions = serde_json::Map::new();
    for i in 0..40 {
        let mut expression = if i == 39 {
            json!({"Fn::Equals": ["a", "a"]})
        } else {
            json!({"Condition": format!("C{}", i + 1)})
        };
        for _ in 0..60 {
            expression = json!({"Fn::Not": [{"Fn::Not": [expression]}]});
        }
        conditions.insert(format!("C{i}"), expression);
    }
    let template = Template::parse(&json!({"Conditions": conditions, "Resources": {}})).unwrap();
    let resolver = Resolver::new(&template, &env, &BTreeMap::new()).unwrap();
    let err = resolver.condition("C0").unwrap_err().to_string();
    assert!(err.contains("more than 256 deep"), "{err}");
    assert!(err.contains("Conditions.C"), "{err}");
}
