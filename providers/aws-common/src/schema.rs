//! One way to declare a resource type: a builder over provider-api's `ResourceTypeSchema`, for
//! the type's name, the template properties it handles and which of them are create-only, the
//! operations beyond create/update/delete, its composite physical id and what `Ref` returns.

use cdkd_provider_api::protocol::{operation, CompositeId, RefValue, ResourceTypeSchema};

/// Builds a [`ResourceTypeSchema`].
#[derive(Debug, Clone)]
pub struct TypeSchema {
    schema: ResourceTypeSchema,
}

fn owned<'a>(names: &'a [&'a str]) -> impl Iterator<Item = String> + 'a {
    names.iter().map(ToString::to_string)
}

impl TypeSchema {
    /// A type handling nothing yet.
    pub fn builder(type_name: &str) -> TypeSchema {
        TypeSchema {
            schema: ResourceTypeSchema {
                type_name: type_name.to_string(),
                ..ResourceTypeSchema::default()
            },
        }
    }

    /// Template properties the type handles (added to those named before).
    pub fn handles(mut self, properties: &[&str]) -> TypeSchema {
        self.schema.handled_properties.extend(owned(properties));
        self
    }

    /// Properties whose change replaces the resource.
    pub fn create_only(mut self, properties: &[&str]) -> TypeSchema {
        self.schema.create_only_properties.extend(owned(properties));
        self
    }

    /// Every property handled so far is create-only (the type has no update).
    pub fn all_create_only(mut self) -> TypeSchema {
        self.schema.create_only_properties = self.schema.handled_properties.clone();
        self
    }

    /// Operations the type answers beyond create, update and delete ([`operation`]).
    pub fn operations(mut self, operations: &[&str]) -> TypeSchema {
        for name in operations {
            if !self.schema.operations.iter().any(|o| o == name) {
                self.schema.operations.push(name.to_string());
            }
        }
        self
    }

    /// The type reads its live state and imports existing resources.
    pub fn read_and_import(self) -> TypeSchema {
        self.operations(&[operation::READ_CURRENT_STATE, operation::IMPORT])
    }

    /// A composite physical id `a|b|...`: segment names and the template properties each comes
    /// from (none for a segment AWS generates). `Ref` returns the whole id unless
    /// [`TypeSchema::ref_value`] says otherwise.
    pub fn composite_id(mut self, segments: &[&str], sources: &[&[&str]]) -> TypeSchema {
        assert_eq!(
            segments.len(),
            sources.len(),
            "{}: one source list per segment",
            self.schema.type_name
        );
        self.schema.composite_id = Some(CompositeId {
            segments: owned(segments).collect(),
            ref_value: RefValue::Whole,
            segment_sources: sources.iter().map(|s| owned(s).collect()).collect(),
        });
        self
    }

    /// What `Ref` returns for a composite id.
    pub fn ref_value(mut self, ref_value: RefValue) -> TypeSchema {
        let composite = self
            .schema
            .composite_id
            .as_mut()
            .expect("ref_value follows composite_id");
        composite.ref_value = ref_value;
        self
    }

    /// Attributes whose values are secret (never written to state in plaintext).
    pub fn sensitive(mut self, attributes: &[&str]) -> TypeSchema {
        self.schema.sensitive_attributes.extend(owned(attributes));
        self
    }

    /// The type answers `find_created` by looking in `scope`: the properties naming where the
    /// resource lives (its parent) and its own name property, whose template values the host
    /// keeps with the create's intent and resolves after a crash.
    pub fn finds_created_in(mut self, scope: &[&str]) -> TypeSchema {
        self.schema.find_scope.extend(owned(scope));
        self.operations(&[operation::FIND_CREATED])
    }

    /// The schema.
    pub fn build(self) -> ResourceTypeSchema {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_declared_through_the_builder() {
        let schema = TypeSchema::builder("AWS::EC2::EIP")
            .handles(&["Domain"])
            .handles(&["Tags"])
            .create_only(&["Domain"])
            .read_and_import()
            .read_and_import()
            .composite_id(&["PublicIp", "AllocationId"], &[&[], &[]])
            .ref_value(RefValue::Segment(0))
            .sensitive(&["Secret"])
            .build();
        assert_eq!(schema.type_name, "AWS::EC2::EIP");
        assert_eq!(schema.handled_properties, ["Domain", "Tags"]);
        assert_eq!(schema.create_only_properties, ["Domain"]);
        assert_eq!(
            schema.operations,
            [operation::READ_CURRENT_STATE, operation::IMPORT]
        );
        let composite = schema.composite_id.unwrap();
        assert_eq!(composite.segments, ["PublicIp", "AllocationId"]);
        assert_eq!(composite.ref_value, RefValue::Segment(0));
        assert_eq!(
            composite.segment_sources,
            vec![Vec::<String>::new(), vec![]]
        );
        assert_eq!(schema.sensitive_attributes, ["Secret"]);
        let all = TypeSchema::builder("T")
            .handles(&["A", "B"])
            .all_create_only()
            .build();
        assert_eq!(all.create_only_properties, ["A", "B"]);
    }
}
