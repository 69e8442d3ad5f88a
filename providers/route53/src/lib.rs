//! cdkd's Route 53 provider plugin: `AWS::Route53::HostedZone`, `AWS::Route53::RecordSet` and
//! `AWS::Route53::RecordSetGroup` (which Cloud Control cannot provision: its registry schema
//! has no read handler) through direct Route 53 calls. Records are written with `UPSERT`, so a
//! create repeated after a crash writes the same record again; `ChangeResourceRecordSets` is
//! not waited on (`PENDING` → `INSYNC` is propagation to Route 53's name servers, which no
//! resource's creation depends on; an ACM certificate waits for its own validation).

mod hosted_zone;
mod record;
mod record_set;
mod record_set_group;

cdkd_provider_api::export_plugin!(description: "AWS::Route53::HostedZone, RecordSet and RecordSetGroup through the Route 53 API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<hosted_zone::HostedZone>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<record_set::RecordSet>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<record_set_group::RecordSetGroup>);

use cdkd_aws_common::aws_error;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// A Route 53 client for the host's endpoint and credentials (Route 53 is global: its calls
/// go to us-east-1 whatever the stack's region).
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_route53::Client, ProviderError> {
    let config = aws_sdk_route53::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .region(aws_sdk_route53::config::Region::new("us-east-1"))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-route53"))
        .build();
    Ok(aws_sdk_route53::Client::from_conf(config))
}

/// Route 53's own error codes the shared table does not know.
pub(crate) const ROUTE53_KINDS: &[(&str, ErrorKind)] = &[
    ("NoSuchHostedZone", ErrorKind::NOT_FOUND),
    ("NoSuchQueryLoggingConfig", ErrorKind::NOT_FOUND),
    ("NoSuchChange", ErrorKind::NOT_FOUND),
    ("HostedZoneAlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("ConflictingDomainExists", ErrorKind::ALREADY_EXISTS),
    ("HostedZoneNotEmpty", ErrorKind::CONFLICT),
    ("PriorRequestNotComplete", ErrorKind::THROTTLED),
    ("InvalidChangeBatch", ErrorKind::VALIDATION),
    ("InvalidInput", ErrorKind::VALIDATION),
    ("InvalidDomainName", ErrorKind::VALIDATION),
    ("InvalidVPCId", ErrorKind::VALIDATION),
];

/// `err` (from [`aws_error`]) with the kind its Route 53 code stands for.
pub(crate) fn r53(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, ROUTE53_KINDS)
}

/// A zone id without the `/hostedzone/` prefix Route 53 answers some calls with.
pub(crate) fn bare_zone_id(id: &str) -> String {
    id.trim_start_matches("/hostedzone/").to_string()
}

/// A DNS name as Route 53 keeps it: fully qualified (ending in a dot), lower case, with the
/// `\052` escape it answers for `*` turned back into `*`.
pub(crate) fn fqdn(name: &str) -> String {
    let name = name.replace("\\052", "*").to_lowercase();
    if name.ends_with('.') {
        name
    } else {
        format!("{name}.")
    }
}

/// `live` spelled as `template` spells it when both name the same DNS name (with or without
/// the final dot, in any case); `live` otherwise.
pub(crate) fn as_template_spells(live: &str, template: Option<&str>) -> String {
    match template {
        Some(given) if fqdn(given) == fqdn(live) => given.to_string(),
        _ => live.replace("\\052", "*"),
    }
}

/// The id of the zone a record's template names: `HostedZoneId`, else the public zone named
/// `HostedZoneName` (ListHostedZonesByName), as CloudFormation resolves it.
pub(crate) async fn zone_of(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    properties: &serde_json::Map<String, serde_json::Value>,
) -> Result<String, ProviderError> {
    if let Some(id) = cdkd_aws_common::string(properties.get("HostedZoneId")) {
        return Ok(bare_zone_id(&id));
    }
    let Some(name) = cdkd_aws_common::string(properties.get("HostedZoneName")) else {
        return Err(ProviderError::validation(format!(
            "{what}: HostedZoneId or HostedZoneName is required"
        )));
    };
    let answer = r53c
        .list_hosted_zones_by_name()
        .dns_name(fqdn(&name))
        .send()
        .await
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: ListHostedZonesByName {name}"),
                e,
            ))
        })?;
    let zones: Vec<String> = answer
        .hosted_zones()
        .iter()
        .filter(|z| fqdn(z.name()) == fqdn(&name))
        .map(|z| bare_zone_id(z.id()))
        .collect();
    match zones.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ProviderError::new(
            ErrorKind::NOT_FOUND,
            format!("{what}: no hosted zone is named {name}"),
        )),
        _ => Err(ProviderError::validation(format!(
            "{what}: several hosted zones are named {name}; give HostedZoneId"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_fully_qualified_and_read_back_as_the_template_spells_them() {
        assert_eq!(fqdn("WWW.Example.com"), "www.example.com.");
        assert_eq!(fqdn("\\052.example.com."), "*.example.com.");
        assert_eq!(
            as_template_spells("www.example.com.", Some("www.example.com")),
            "www.example.com"
        );
        assert_eq!(
            as_template_spells("other.example.com.", Some("www.example.com")),
            "other.example.com."
        );
        assert_eq!(bare_zone_id("/hostedzone/Z123"), "Z123");
        assert_eq!(bare_zone_id("Z123"), "Z123");
        let err = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::OTHER, "x").with_aws_code("NoSuchHostedZone"),
            ROUTE53_KINDS,
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
    }
}
