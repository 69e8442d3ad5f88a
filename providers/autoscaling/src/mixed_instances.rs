//! A group's `MixedInstancesPolicy` (instance-type overrides, attribute-based instance
//! requirements, the on-demand and spot distribution) between the template's shape and Auto
//! Scaling's, both ways. CreateAutoScalingGroup and UpdateAutoScalingGroup take it whole.

use aws_sdk_autoscaling::types::{
    AcceleratorCountRequest, AcceleratorManufacturer, AcceleratorName,
    AcceleratorTotalMemoryMiBRequest, AcceleratorType, BareMetal, BaselineEbsBandwidthMbpsRequest,
    BaselinePerformanceFactorsRequest, BurstablePerformance, CpuManufacturer,
    CpuPerformanceFactorRequest, InstanceGeneration, InstanceRequirements, InstancesDistribution,
    LaunchTemplate, LaunchTemplateOverrides, LaunchTemplateSpecification, LocalStorage,
    LocalStorageType, MemoryGiBPerVCpuRequest, MemoryMiBRequest, MixedInstancesPolicy,
    NetworkBandwidthGbpsRequest, NetworkInterfaceCountRequest, PerformanceFactorReferenceRequest,
    TotalLocalStorageGbRequest, VCpuCountRequest,
};
use cdkd_aws_common::{flag, int, put, string, strings, text};
use serde_json::{json, Map, Value};

/// A number of the template (a JSON number or a numeric string) as a float.
fn double(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A `{Min, Max}` block of the template as one of the SDK's range requests.
macro_rules! range {
    ($block:expr, $name:literal, $request:ty, $number:ident) => {
        $block.get($name).filter(|v| v.is_object()).map(|r| {
            <$request>::builder()
                .set_min($number(r.get("Min")))
                .set_max($number(r.get("Max")))
                .build()
        })
    };
}

/// A live range request in template shape.
macro_rules! range_shape {
    ($shape:expr, $name:literal, $live:expr) => {
        if let Some(r) = $live {
            let mut block = Map::new();
            put(&mut block, "Min", r.min().map(|v| json!(v)));
            put(&mut block, "Max", r.max().map(|v| json!(v)));
            $shape.insert($name.into(), Value::Object(block));
        }
    };
}

/// A list of enum values of the template.
fn enums<T: for<'a> From<&'a str>>(value: Option<&Value>) -> Option<Vec<T>> {
    strings(value).map(|items| items.iter().map(|s| T::from(s.as_str())).collect())
}

/// Puts a list of live values, when it has any.
fn put_list<T: AsRef<str>>(shape: &mut Map<String, Value>, name: &str, items: &[T]) {
    if !items.is_empty() {
        let values: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
        shape.insert(name.into(), json!(values));
    }
}

/// The template's launch template specification (`LaunchTemplateId` or `LaunchTemplateName`,
/// and `Version`).
fn specification(value: Option<&Value>) -> Option<LaunchTemplateSpecification> {
    let value = value.filter(|v| v.is_object())?;
    let id = string(value.get("LaunchTemplateId"));
    Some(
        LaunchTemplateSpecification::builder()
            .set_launch_template_name(
                string(value.get("LaunchTemplateName")).filter(|_| id.is_none()),
            )
            .set_launch_template_id(id)
            .set_version(text(value.get("Version")))
            .build(),
    )
}

fn specification_shape(s: &LaunchTemplateSpecification) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "LaunchTemplateId",
        s.launch_template_id().map(|v| json!(v)),
    );
    put(
        &mut shape,
        "LaunchTemplateName",
        s.launch_template_name().map(|v| json!(v)),
    );
    put(&mut shape, "Version", s.version().map(|v| json!(v)));
    Value::Object(shape)
}

/// `InstanceRequirements` (attribute-based instance type selection) as Auto Scaling's.
fn requirements(r: &Value) -> InstanceRequirements {
    let cpu = r
        .get("BaselinePerformanceFactors")
        .and_then(|b| b.get("Cpu"))
        .map(|cpu| {
            let references = cpu
                .get("References")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|i| {
                            PerformanceFactorReferenceRequest::builder()
                                .set_instance_family(string(i.get("InstanceFamily")))
                                .build()
                        })
                        .collect()
                });
            BaselinePerformanceFactorsRequest::builder()
                .cpu(
                    CpuPerformanceFactorRequest::builder()
                        .set_references(references)
                        .build(),
                )
                .build()
        });
    InstanceRequirements::builder()
        .set_v_cpu_count(range!(r, "VCpuCount", VCpuCountRequest, int))
        .set_memory_mib(range!(r, "MemoryMiB", MemoryMiBRequest, int))
        .set_cpu_manufacturers(enums::<CpuManufacturer>(r.get("CpuManufacturers")))
        .set_memory_gib_per_v_cpu(range!(
            r,
            "MemoryGiBPerVCpu",
            MemoryGiBPerVCpuRequest,
            double
        ))
        .set_excluded_instance_types(strings(r.get("ExcludedInstanceTypes")))
        .set_instance_generations(enums::<InstanceGeneration>(r.get("InstanceGenerations")))
        .set_spot_max_price_percentage_over_lowest_price(int(
            r.get("SpotMaxPricePercentageOverLowestPrice")
        ))
        .set_max_spot_price_as_percentage_of_optimal_on_demand_price(int(
            r.get("MaxSpotPriceAsPercentageOfOptimalOnDemandPrice")
        ))
        .set_on_demand_max_price_percentage_over_lowest_price(int(
            r.get("OnDemandMaxPricePercentageOverLowestPrice")
        ))
        .set_bare_metal(string(r.get("BareMetal")).map(|v| BareMetal::from(v.as_str())))
        .set_burstable_performance(
            string(r.get("BurstablePerformance")).map(|v| BurstablePerformance::from(v.as_str())),
        )
        .set_require_hibernate_support(flag(r.get("RequireHibernateSupport")))
        .set_network_interface_count(range!(
            r,
            "NetworkInterfaceCount",
            NetworkInterfaceCountRequest,
            int
        ))
        .set_local_storage(string(r.get("LocalStorage")).map(|v| LocalStorage::from(v.as_str())))
        .set_local_storage_types(enums::<LocalStorageType>(r.get("LocalStorageTypes")))
        .set_total_local_storage_gb(range!(
            r,
            "TotalLocalStorageGB",
            TotalLocalStorageGbRequest,
            double
        ))
        .set_baseline_ebs_bandwidth_mbps(range!(
            r,
            "BaselineEbsBandwidthMbps",
            BaselineEbsBandwidthMbpsRequest,
            int
        ))
        .set_accelerator_types(enums::<AcceleratorType>(r.get("AcceleratorTypes")))
        .set_accelerator_count(range!(r, "AcceleratorCount", AcceleratorCountRequest, int))
        .set_accelerator_manufacturers(enums::<AcceleratorManufacturer>(
            r.get("AcceleratorManufacturers"),
        ))
        .set_accelerator_names(enums::<AcceleratorName>(r.get("AcceleratorNames")))
        .set_accelerator_total_memory_mib(range!(
            r,
            "AcceleratorTotalMemoryMiB",
            AcceleratorTotalMemoryMiBRequest,
            int
        ))
        .set_network_bandwidth_gbps(range!(
            r,
            "NetworkBandwidthGbps",
            NetworkBandwidthGbpsRequest,
            double
        ))
        .set_allowed_instance_types(strings(r.get("AllowedInstanceTypes")))
        .set_baseline_performance_factors(cpu)
        .build()
}

fn requirements_shape(r: &InstanceRequirements) -> Value {
    let mut shape = Map::new();
    range_shape!(shape, "VCpuCount", r.v_cpu_count());
    range_shape!(shape, "MemoryMiB", r.memory_mib());
    put_list(&mut shape, "CpuManufacturers", r.cpu_manufacturers());
    range_shape!(shape, "MemoryGiBPerVCpu", r.memory_gib_per_v_cpu());
    put_list(
        &mut shape,
        "ExcludedInstanceTypes",
        r.excluded_instance_types(),
    );
    put_list(&mut shape, "InstanceGenerations", r.instance_generations());
    put(
        &mut shape,
        "SpotMaxPricePercentageOverLowestPrice",
        r.spot_max_price_percentage_over_lowest_price()
            .map(|v| json!(v)),
    );
    put(
        &mut shape,
        "MaxSpotPriceAsPercentageOfOptimalOnDemandPrice",
        r.max_spot_price_as_percentage_of_optimal_on_demand_price()
            .map(|v| json!(v)),
    );
    put(
        &mut shape,
        "OnDemandMaxPricePercentageOverLowestPrice",
        r.on_demand_max_price_percentage_over_lowest_price()
            .map(|v| json!(v)),
    );
    put(
        &mut shape,
        "BareMetal",
        r.bare_metal().map(|v| json!(v.as_str())),
    );
    put(
        &mut shape,
        "BurstablePerformance",
        r.burstable_performance().map(|v| json!(v.as_str())),
    );
    put(
        &mut shape,
        "RequireHibernateSupport",
        r.require_hibernate_support().map(|v| json!(v)),
    );
    range_shape!(shape, "NetworkInterfaceCount", r.network_interface_count());
    put(
        &mut shape,
        "LocalStorage",
        r.local_storage().map(|v| json!(v.as_str())),
    );
    put_list(&mut shape, "LocalStorageTypes", r.local_storage_types());
    range_shape!(shape, "TotalLocalStorageGB", r.total_local_storage_gb());
    range_shape!(
        shape,
        "BaselineEbsBandwidthMbps",
        r.baseline_ebs_bandwidth_mbps()
    );
    put_list(&mut shape, "AcceleratorTypes", r.accelerator_types());
    range_shape!(shape, "AcceleratorCount", r.accelerator_count());
    put_list(
        &mut shape,
        "AcceleratorManufacturers",
        r.accelerator_manufacturers(),
    );
    put_list(&mut shape, "AcceleratorNames", r.accelerator_names());
    range_shape!(
        shape,
        "AcceleratorTotalMemoryMiB",
        r.accelerator_total_memory_mib()
    );
    range_shape!(shape, "NetworkBandwidthGbps", r.network_bandwidth_gbps());
    put_list(
        &mut shape,
        "AllowedInstanceTypes",
        r.allowed_instance_types(),
    );
    if let Some(cpu) = r.baseline_performance_factors().and_then(|b| b.cpu()) {
        let references: Vec<Value> = cpu
            .references()
            .iter()
            .map(|i| json!({"InstanceFamily": i.instance_family()}))
            .collect();
        shape.insert(
            "BaselinePerformanceFactors".into(),
            json!({"Cpu": {"References": references}}),
        );
    }
    Value::Object(shape)
}

/// `MixedInstancesPolicy` as Auto Scaling's.
pub(crate) fn mixed_instances(value: Option<&Value>) -> Option<MixedInstancesPolicy> {
    let value = value.filter(|v| v.is_object())?;
    let template = value
        .get("LaunchTemplate")
        .filter(|v| v.is_object())
        .map(|t| {
            let overrides = t.get("Overrides").and_then(Value::as_array).map(|items| {
                items
                    .iter()
                    .map(|o| {
                        LaunchTemplateOverrides::builder()
                            .set_instance_type(string(o.get("InstanceType")))
                            .set_weighted_capacity(text(o.get("WeightedCapacity")))
                            .set_launch_template_specification(specification(
                                o.get("LaunchTemplateSpecification"),
                            ))
                            .set_instance_requirements(
                                o.get("InstanceRequirements")
                                    .filter(|v| v.is_object())
                                    .map(requirements),
                            )
                            .set_image_id(string(o.get("ImageId")))
                            .build()
                    })
                    .collect()
            });
            LaunchTemplate::builder()
                .set_launch_template_specification(specification(
                    t.get("LaunchTemplateSpecification"),
                ))
                .set_overrides(overrides)
                .build()
        });
    let distribution = value
        .get("InstancesDistribution")
        .filter(|v| v.is_object())
        .map(|d| {
            InstancesDistribution::builder()
                .set_on_demand_allocation_strategy(string(d.get("OnDemandAllocationStrategy")))
                .set_on_demand_base_capacity(int(d.get("OnDemandBaseCapacity")))
                .set_on_demand_percentage_above_base_capacity(int(
                    d.get("OnDemandPercentageAboveBaseCapacity")
                ))
                .set_spot_allocation_strategy(string(d.get("SpotAllocationStrategy")))
                .set_spot_instance_pools(int(d.get("SpotInstancePools")))
                .set_spot_max_price(text(d.get("SpotMaxPrice")))
                .build()
        });
    Some(
        MixedInstancesPolicy::builder()
            .set_launch_template(template)
            .set_instances_distribution(distribution)
            .build(),
    )
}

/// The policy an update sends: `after`'s, with a spot price `before` set and `after` dropped
/// sent empty, which is how Auto Scaling clears it (left out, the old price would stay).
pub(crate) fn mixed_instances_update(
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<MixedInstancesPolicy> {
    let price = |policy: Option<&Value>| {
        policy
            .and_then(|p| p.get("InstancesDistribution"))
            .and_then(|d| d.get("SpotMaxPrice"))
            .is_some_and(|v| !v.is_null())
    };
    if !price(before) || price(after) {
        return mixed_instances(after);
    }
    let mut sent = after.filter(|v| v.is_object())?.clone();
    sent["InstancesDistribution"]["SpotMaxPrice"] = json!("");
    mixed_instances(Some(&sent))
}

/// A live `MixedInstancesPolicy` in template shape.
pub(crate) fn mixed_instances_shape(policy: &MixedInstancesPolicy) -> Value {
    let mut shape = Map::new();
    if let Some(t) = policy.launch_template() {
        let mut template = Map::new();
        put(
            &mut template,
            "LaunchTemplateSpecification",
            t.launch_template_specification().map(specification_shape),
        );
        let overrides: Vec<Value> = t
            .overrides()
            .iter()
            .map(|o| {
                let mut item = Map::new();
                put(
                    &mut item,
                    "InstanceType",
                    o.instance_type().map(|v| json!(v)),
                );
                put(
                    &mut item,
                    "WeightedCapacity",
                    o.weighted_capacity().map(|v| json!(v)),
                );
                put(
                    &mut item,
                    "LaunchTemplateSpecification",
                    o.launch_template_specification().map(specification_shape),
                );
                put(
                    &mut item,
                    "InstanceRequirements",
                    o.instance_requirements().map(requirements_shape),
                );
                put(&mut item, "ImageId", o.image_id().map(|v| json!(v)));
                Value::Object(item)
            })
            .collect();
        if !overrides.is_empty() {
            template.insert("Overrides".into(), Value::Array(overrides));
        }
        shape.insert("LaunchTemplate".into(), Value::Object(template));
    }
    if let Some(d) = policy.instances_distribution() {
        let mut block = Map::new();
        put(
            &mut block,
            "OnDemandAllocationStrategy",
            d.on_demand_allocation_strategy().map(|v| json!(v)),
        );
        put(
            &mut block,
            "OnDemandBaseCapacity",
            d.on_demand_base_capacity().map(|v| json!(v)),
        );
        put(
            &mut block,
            "OnDemandPercentageAboveBaseCapacity",
            d.on_demand_percentage_above_base_capacity()
                .map(|v| json!(v)),
        );
        put(
            &mut block,
            "SpotAllocationStrategy",
            d.spot_allocation_strategy().map(|v| json!(v)),
        );
        put(
            &mut block,
            "SpotInstancePools",
            d.spot_instance_pools().map(|v| json!(v)),
        );
        put(
            &mut block,
            "SpotMaxPrice",
            d.spot_max_price().map(|v| json!(v)),
        );
        shape.insert("InstancesDistribution".into(), Value::Object(block));
    }
    Value::Object(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mixed_instances_policy_converts_and_reads_back_as_written() {
        let written = json!({
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-1", "Version": "3"},
                "Overrides": [
                    {"InstanceType": "t3.micro", "WeightedCapacity": "1"},
                    {"InstanceType": "t3a.micro", "LaunchTemplateSpecification": {"LaunchTemplateName": "arm", "Version": "$Latest"}},
                    {"InstanceRequirements": {
                        "VCpuCount": {"Min": 2, "Max": 4},
                        "MemoryMiB": {"Min": 4096},
                        "MemoryGiBPerVCpu": {"Min": 1.5, "Max": 8.0},
                        "CpuManufacturers": ["intel", "amd"],
                        "InstanceGenerations": ["current"],
                        "BurstablePerformance": "excluded",
                        "NetworkBandwidthGbps": {"Min": 0.5},
                        "BaselinePerformanceFactors": {"Cpu": {"References": [{"InstanceFamily": "c6i"}]}},
                    }},
                ],
            },
            "InstancesDistribution": {
                "OnDemandBaseCapacity": 1,
                "OnDemandPercentageAboveBaseCapacity": 25,
                "SpotAllocationStrategy": "price-capacity-optimized",
                "SpotMaxPrice": "0.05",
            },
        });
        let policy = mixed_instances(Some(&written)).expect("a policy");
        let overrides = policy.launch_template().unwrap().overrides();
        assert_eq!(overrides.len(), 3);
        let needs = overrides[2].instance_requirements().unwrap();
        assert_eq!(needs.v_cpu_count().unwrap().max(), Some(4));
        assert_eq!(needs.memory_gib_per_v_cpu().unwrap().min(), Some(1.5));
        assert_eq!(mixed_instances_shape(&policy), written);
        assert!(mixed_instances(None).is_none());
        let mut cheaper = written.clone();
        cheaper["InstancesDistribution"]
            .as_object_mut()
            .unwrap()
            .remove("SpotMaxPrice");
        let sent = mixed_instances_update(Some(&written), Some(&cheaper)).unwrap();
        assert_eq!(
            sent.instances_distribution().unwrap().spot_max_price(),
            Some(""),
            "a dropped price is cleared"
        );
        let kept = mixed_instances_update(Some(&written), Some(&written)).unwrap();
        assert_eq!(
            kept.instances_distribution().unwrap().spot_max_price(),
            Some("0.05")
        );
    }
}
