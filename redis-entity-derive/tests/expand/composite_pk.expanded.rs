const _: () = {
    fn __pk_index_value(
        member: &str,
        field: &str,
    ) -> ::re::__private::core::option::Option<::re::__private::Vec<u8>> {
        #[allow(unused_variables)]
        let pk = <RedPackage as ::re::__private::Entity>::read_member(member)?;
        #[allow(unused_variables)]
        let pk = &pk;
        let (__p0, __p1, __p2) = pk;
        match field {
            "program_id" => {
                ::re::__private::core::option::Option::Some(
                    ::re::__private::to_bytes(__p0),
                )
            }
            "uid" => {
                ::re::__private::core::option::Option::Some(
                    ::re::__private::to_bytes(__p2),
                )
            }
            _ => ::re::__private::core::option::Option::None,
        }
    }
    impl ::re::__private::Derived for RedPackage {}
    impl ::re::__private::Entity for RedPackage {
        type Pk = (u64, u64, String);
        const DESC: &'static ::re::__private::EntityDesc = {
            static DESC: ::re::__private::EntityDesc = ::re::__private::EntityDesc {
                type_name: "RedPackage",
                prefix: "red_package",
                layout: ::re::__private::Layout::Hash,
                key_pattern: "red_package:{<program_id>_<task_id>_<uid>}",
                key_head: "red_package:",
                key_tail: "",
                pk_fields: &["program_id", "task_id", "uid"],
                numeric_pk: false,
                columns: &[
                    ::re::__private::ColumnDesc {
                        name: "status",
                        rust_type: "u8",
                        optional: false,
                        ttl: ::re::__private::core::option::Option::None,
                        form: ::re::__private::ColumnForm::Text,
                        alias: ::re::__private::core::option::Option::None,
                    },
                ],
                maps: &[],
                indexes: &[
                    ::re::__private::IndexDesc {
                        field: "program_id",
                        source: ::re::__private::IndexSource::Pk,
                        kind: ::re::__private::IndexKind::Equality,
                        score: ::re::__private::core::option::Option::None,
                    },
                    ::re::__private::IndexDesc {
                        field: "uid",
                        source: ::re::__private::IndexSource::Pk,
                        kind: ::re::__private::IndexKind::Equality,
                        score: ::re::__private::core::option::Option::None,
                    },
                ],
                version: ::re::__private::core::option::Option::None,
                pk_index_value: __pk_index_value,
                ttl: ::re::__private::core::option::Option::None,
                shards: ::re::__private::DEFAULT_SHARDS,
                group: ::re::__private::core::option::Option::None,
            };
            &DESC
        };
        const SCHEMA: u64 = ::re::__private::fingerprint(Self::DESC);
        fn write_member(pk: &Self::Pk, out: &mut ::re::__private::String) {
            let (__p0, __p1, __p2) = pk;
            ::re::__private::KeyPart::write_key(__p0, out, "_@");
            out.push_str("_");
            ::re::__private::KeyPart::write_key(__p1, out, "_@");
            out.push_str("_");
            ::re::__private::KeyPart::write_key(__p2, out, "_@");
        }
        fn write_own_member(&self, out: &mut ::re::__private::String) {
            let __p0 = &self.program_id;
            let __p1 = &self.task_id;
            let __p2 = &self.uid;
            ::re::__private::KeyPart::write_key(__p0, out, "_@");
            out.push_str("_");
            ::re::__private::KeyPart::write_key(__p1, out, "_@");
            out.push_str("_");
            ::re::__private::KeyPart::write_key(__p2, out, "_@");
        }
        fn read_member(member: &str) -> ::re::__private::core::option::Option<Self::Pk> {
            let __rest: &str = member;
            let (__seg, __rest) = __rest.split_once("_")?;
            let __r0 = ::re::__private::KeyPart::read_key(__seg, "_@")?;
            let (__seg, __rest) = __rest.split_once("_")?;
            let __r1 = ::re::__private::KeyPart::read_key(__seg, "_@")?;
            let (__seg, __rest) = (__rest, "");
            let __r2 = ::re::__private::KeyPart::read_key(__seg, "_@")?;
            ::re::__private::core::option::Option::Some((__r0, __r1, __r2))
        }
        fn to_row(&self) -> ::re::__private::Result<::re::__private::Row> {
            ::re::__private::core::result::Result::Ok(::re::__private::Row {
                columns: ::re::__private::Vec::from([
                    <::re::__private::Plain as ::re::__private::FieldCodec<
                        u8,
                    >>::encode("status", &self.status)?,
                ]),
                maps: ::re::__private::Vec::from([]),
            })
        }
        fn from_row(
            pk: &Self::Pk,
            row: ::re::__private::Row,
        ) -> ::re::__private::core::result::Result<Self, ::re::__private::FieldError> {
            let mut __cols = row.columns.into_iter();
            let mut __maps = row.maps.into_iter();
            let __c0 = <::re::__private::Plain as ::re::__private::FieldCodec<
                u8,
            >>::decode_owned("status", ::re::__private::take(&mut __cols))?;
            let (__p0, __p1, __p2) = pk;
            ::re::__private::core::result::Result::Ok(RedPackage {
                program_id: ::re::__private::core::clone::Clone::clone(__p0),
                task_id: ::re::__private::core::clone::Clone::clone(__p1),
                uid: ::re::__private::core::clone::Clone::clone(__p2),
                status: __c0,
            })
        }
    }
};
#[doc(hidden)]
#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_local_definitions,
    dead_code,
    unreachable_pub,
    unnameable_types
)]
const RedPackage: () = {
    pub struct program_id;
    pub struct uid;
    pub struct status;
    impl ::re::__private::FieldMarker<0> for RedPackage {
        type Marker = program_id;
    }
    impl ::re::__private::FieldMarker<2> for RedPackage {
        type Marker = uid;
    }
    impl ::re::__private::FieldMarker<3> for RedPackage {
        type Marker = status;
    }
    const _: () = {
        struct program_id;
        struct uid;
        struct status;
    };
};
#[allow(dead_code)]
impl RedPackage {
    ///Handle of the indexed pk field `program_id` (queries only: a pk is never set).
    pub(crate) const PROGRAM_ID: ::re::__private::Field<
        RedPackage,
        u64,
        ::re::__private::PkPart,
        ::re::__private::Equality<u64>,
        <RedPackage as ::re::__private::FieldMarker<0>>::Marker,
    > = ::re::__private::Field::new("program_id", usize::MAX);
    ///Handle of the indexed pk field `uid` (queries only: a pk is never set).
    pub(crate) const UID: ::re::__private::Field<
        RedPackage,
        String,
        ::re::__private::PkPart,
        ::re::__private::Equality<String>,
        <RedPackage as ::re::__private::FieldMarker<2>>::Marker,
    > = ::re::__private::Field::new("uid", usize::MAX);
    ///Handle of the `status` field (stored as `status`).
    pub(crate) const STATUS: ::re::__private::Field<
        RedPackage,
        u8,
        ::re::__private::Plain,
        ::re::__private::NoIndex,
        <RedPackage as ::re::__private::FieldMarker<3>>::Marker,
    > = ::re::__private::Field::new("status", 0usize);
    ///The entity key for `pk`, without namespace: `red_package:{<program_id>_<task_id>_<uid>}`.
    pub(crate) fn key(
        pk: &<Self as ::re::__private::Entity>::Pk,
    ) -> ::re::__private::String {
        ::re::__private::entity_key::<Self>(pk)
    }
    /// Every key family of this entity with its Redis type.
    pub(crate) fn layout() -> ::re::__private::EntityLayout {
        ::re::__private::EntityLayout::of(<Self as ::re::__private::Entity>::DESC)
    }
}
