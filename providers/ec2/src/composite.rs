//! Composite (pipe-delimited) physical ids: `a|b|c`, the convention Cloud Control uses for a
//! multi-part primary identifier. The separator is not escaped, so a segment containing `|` is
//! refused (the host refuses it at pre-flight too, from the declared segment sources).

use cdkd_provider_api::ProviderError;

/// Joins `(segment name, value)` pairs into an id, refusing a value containing `|`.
pub(crate) fn join(what: &str, segments: &[(&str, &str)]) -> Result<String, ProviderError> {
    if let Some((name, value)) = segments.iter().find(|(_, v)| v.contains('|')) {
        return Err(ProviderError::validation(format!(
            "{what}: {name} {value:?} contains '|', the separator of the composite physical id; use a value without it"
        )));
    }
    Ok(segments
        .iter()
        .map(|(_, v)| *v)
        .collect::<Vec<_>>()
        .join("|"))
}

/// Splits an id into exactly `names.len()` segments, naming the expected shape otherwise.
pub(crate) fn split<'a>(
    what: &str,
    id: &'a str,
    names: &[&str],
) -> Result<Vec<&'a str>, ProviderError> {
    let parts: Vec<&str> = id.split('|').collect();
    if parts.len() != names.len() || parts.iter().any(|p| p.is_empty()) {
        return Err(ProviderError::validation(format!(
            "{what}: physical id {id:?} is not of the form {} (quote it on a command line: '|' is the shell's pipe)",
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join("|")
        )));
    }
    Ok(parts)
}

/// A port segment: the number, or `-1` when the template omits it.
pub(crate) fn port(value: Option<i32>) -> String {
    value.unwrap_or(-1).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_aws_common::TypeSchema;
    use cdkd_provider_api::protocol::RefValue;

    #[test]
    fn ids_join_and_split_round_trip() {
        let id = join(
            "AWS::EC2::Route R",
            &[("routeTableId", "rtb-1"), ("destination", "0.0.0.0/0")],
        )
        .unwrap();
        assert_eq!(id, "rtb-1|0.0.0.0/0");
        assert_eq!(
            split("R", &id, &["routeTableId", "destination"]).unwrap(),
            ["rtb-1", "0.0.0.0/0"]
        );
        assert_eq!(port(None), "-1");
        assert_eq!(port(Some(443)), "443");
    }

    #[test]
    fn a_separator_inside_a_segment_is_refused() {
        let err = join(
            "AWS::EC2::Route R",
            &[("routeTableId", "rtb-1"), ("destination", "pl-1|x")],
        )
        .unwrap_err();
        assert!(
            err.message.contains("destination \"pl-1|x\" contains '|'"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_malformed_id_names_the_expected_shape() {
        let err = split("AWS::EC2::EIP E", "52.1.2.3", &["publicIp", "allocationId"]).unwrap_err();
        assert!(
            err.message
                .contains("not of the form <publicIp>|<allocationId>"),
            "{}",
            err.message
        );
        assert!(split("E", "a||b", &["x", "y", "z"]).is_err());
    }

    #[test]
    fn ref_is_the_declared_segment() {
        let eip = TypeSchema::builder("AWS::EC2::EIP")
            .composite_id(&["publicIp", "allocationId"], &[&[], &[]])
            .ref_value(RefValue::Segment(0))
            .build()
            .composite_id
            .unwrap();
        assert_eq!(
            eip.ref_value.apply("52.1.2.3|eipalloc-1", None),
            serde_json::json!("52.1.2.3")
        );
        let route = TypeSchema::builder("AWS::EC2::Route")
            .composite_id(
                &["routeTableId", "destination"],
                &[&["RouteTableId"], &["DestinationCidrBlock"]],
            )
            .build()
            .composite_id
            .unwrap();
        assert_eq!(
            route.ref_value.apply("rtb-1|0.0.0.0/0", None),
            serde_json::json!("rtb-1|0.0.0.0/0")
        );
    }
}
