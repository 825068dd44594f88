const _: () = {
    fn __pk_index_value(
        member: &str,
        field: &str,
    ) -> ::redis_entity::__private::core::option::Option<
        ::redis_entity::__private::Vec<u8>,
    > {
        #[allow(unused_variables)]
        let pk = <Document as ::redis_entity::__private::Entity>::read_member(member)?;
        #[allow(unused_variables)]
        let pk = &pk;
        let __p0 = pk;
        match field {
            _ => ::redis_entity::__private::core::option::Option::None,
        }
    }
    impl ::redis_entity::__private::Derived for Document {}
    impl ::redis_entity::__private::Entity for Document {
        type Pk = String;
        const DESC: &'static ::redis_entity::__private::EntityDesc = {
            static DESC: ::redis_entity::__private::EntityDesc = ::redis_entity::__private::EntityDesc {
                type_name: "Document",
                prefix: "doc",
                layout: ::redis_entity::__private::Layout::Json,
                key_pattern: "doc:{<id>}",
                key_head: "doc:",
                key_tail: "",
                pk_fields: &["id"],
                numeric_pk: false,
                columns: &[
                    ::redis_entity::__private::ColumnDesc {
                        name: "title",
                        rust_type: "String",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Json,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "body",
                        rust_type: "Option<String>",
                        optional: true,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Json,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "tags",
                        rust_type: "Vec<String>",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Json,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "meta",
                        rust_type: "BTreeMap<String, u32>",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Json,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                ],
                maps: &[],
                indexes: &[],
                version: ::redis_entity::__private::core::option::Option::None,
                pk_index_value: __pk_index_value,
                ttl: ::redis_entity::__private::core::option::Option::None,
                shards: ::redis_entity::__private::DEFAULT_SHARDS,
                group: ::redis_entity::__private::core::option::Option::None,
            };
            &DESC
        };
        const SCHEMA: u64 = ::redis_entity::__private::fingerprint(Self::DESC);
        fn write_member(pk: &Self::Pk, out: &mut ::redis_entity::__private::String) {
            let __p0 = pk;
            ::redis_entity::__private::KeyPart::write_key(__p0, out, "@");
        }
        fn write_own_member(&self, out: &mut ::redis_entity::__private::String) {
            let __p0 = &self.id;
            ::redis_entity::__private::KeyPart::write_key(__p0, out, "@");
        }
        fn read_member(
            member: &str,
        ) -> ::redis_entity::__private::core::option::Option<Self::Pk> {
            let __rest: &str = member;
            let (__seg, __rest) = (__rest, "");
            let __r0 = ::redis_entity::__private::KeyPart::read_key(__seg, "@")?;
            ::redis_entity::__private::core::option::Option::Some(__r0)
        }
        fn to_row(
            &self,
        ) -> ::redis_entity::__private::Result<::redis_entity::__private::Row> {
            ::redis_entity::__private::core::result::Result::Ok(::redis_entity::__private::Row {
                columns: ::redis_entity::__private::Vec::from([
                    <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                        String,
                    >>::encode("title", &self.title)?,
                    <::redis_entity::__private::JsonOptional as ::redis_entity::__private::FieldCodec<
                        Option<String>,
                    >>::encode("body", &self.body)?,
                    <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                        Vec<String>,
                    >>::encode("tags", &self.tags)?,
                    <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                        BTreeMap<String, u32>,
                    >>::encode("meta", &self.meta)?,
                ]),
                maps: ::redis_entity::__private::Vec::from([]),
            })
        }
        fn from_row(
            pk: &Self::Pk,
            row: ::redis_entity::__private::Row,
        ) -> ::redis_entity::__private::core::result::Result<
            Self,
            ::redis_entity::__private::FieldError,
        > {
            let mut __cols = row.columns.into_iter();
            let mut __maps = row.maps.into_iter();
            let __c0 = <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                String,
            >>::decode_owned("title", ::redis_entity::__private::take(&mut __cols))?;
            let __c1 = <::redis_entity::__private::JsonOptional as ::redis_entity::__private::FieldCodec<
                Option<String>,
            >>::decode_owned("body", ::redis_entity::__private::take(&mut __cols))?;
            let __c2 = <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                Vec<String>,
            >>::decode_owned("tags", ::redis_entity::__private::take(&mut __cols))?;
            let __c3 = <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                BTreeMap<String, u32>,
            >>::decode_owned("meta", ::redis_entity::__private::take(&mut __cols))?;
            let __p0 = pk;
            ::redis_entity::__private::core::result::Result::Ok(Document {
                id: ::redis_entity::__private::core::clone::Clone::clone(__p0),
                title: __c0,
                body: __c1,
                tags: __c2,
                meta: __c3,
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
const Document: () = {
    pub struct title;
    pub struct body;
    pub struct tags;
    pub struct meta;
    impl ::redis_entity::__private::FieldMarker<1> for Document {
        type Marker = title;
    }
    impl ::redis_entity::__private::FieldMarker<2> for Document {
        type Marker = body;
    }
    impl ::redis_entity::__private::FieldMarker<3> for Document {
        type Marker = tags;
    }
    impl ::redis_entity::__private::FieldMarker<4> for Document {
        type Marker = meta;
    }
    const _: () = {
        struct title;
        struct body;
        struct tags;
        struct meta;
    };
};
#[allow(dead_code)]
impl Document {
    ///Handle of the `title` field (stored as `title`).
    const TITLE: ::redis_entity::__private::Field<
        Document,
        String,
        ::redis_entity::__private::Json,
        ::redis_entity::__private::NoIndex,
        <Document as ::redis_entity::__private::FieldMarker<1>>::Marker,
    > = ::redis_entity::__private::Field::new("title", 0usize);
    ///Handle of the `body` field (stored as `body`).
    const BODY: ::redis_entity::__private::Field<
        Document,
        Option<String>,
        ::redis_entity::__private::JsonOptional,
        ::redis_entity::__private::NoIndex,
        <Document as ::redis_entity::__private::FieldMarker<2>>::Marker,
    > = ::redis_entity::__private::Field::new("body", 1usize);
    ///Handle of the `tags` field (stored as `tags`).
    const TAGS: ::redis_entity::__private::Field<
        Document,
        Vec<String>,
        ::redis_entity::__private::Json,
        ::redis_entity::__private::NoIndex,
        <Document as ::redis_entity::__private::FieldMarker<3>>::Marker,
    > = ::redis_entity::__private::Field::new("tags", 2usize);
    ///Handle of the `meta` field (stored as `meta`).
    const META: ::redis_entity::__private::Field<
        Document,
        BTreeMap<String, u32>,
        ::redis_entity::__private::Json,
        ::redis_entity::__private::NoIndex,
        <Document as ::redis_entity::__private::FieldMarker<4>>::Marker,
    > = ::redis_entity::__private::Field::new("meta", 3usize);
    ///The entity key for `pk`, without namespace: `doc:{<id>}`.
    fn key(
        pk: &<Self as ::redis_entity::__private::Entity>::Pk,
    ) -> ::redis_entity::__private::String {
        ::redis_entity::__private::entity_key::<Self>(pk)
    }
    /// Every key family of this entity with its Redis type.
    fn layout() -> ::redis_entity::__private::EntityLayout {
        ::redis_entity::__private::EntityLayout::of(
            <Self as ::redis_entity::__private::Entity>::DESC,
        )
    }
}
