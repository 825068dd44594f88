::core::compile_error! {
    "an entity needs a primary key: mark one or more fields with `#[pk]`"
}
const _: () = {
    impl ::redis_entity::__private::Derived for User {}
    impl ::redis_entity::__private::Entity for User {
        type Pk = ();
        const DESC: &'static ::redis_entity::__private::EntityDesc = ::redis_entity::__private::STUB_DESC;
        const SCHEMA: u64 = 0;
        fn write_member(_: &Self::Pk, _: &mut ::redis_entity::__private::String) {
            ::redis_entity::__private::core::unimplemented!()
        }
        fn write_own_member(&self, _: &mut ::redis_entity::__private::String) {
            ::redis_entity::__private::core::unimplemented!()
        }
        fn read_member(
            _: &str,
        ) -> ::redis_entity::__private::core::option::Option<Self::Pk> {
            ::redis_entity::__private::core::unimplemented!()
        }
        fn to_row(
            &self,
        ) -> ::redis_entity::__private::Result<::redis_entity::__private::Row> {
            ::redis_entity::__private::core::unimplemented!()
        }
        fn from_row(
            _: &Self::Pk,
            _: ::redis_entity::__private::Row,
        ) -> ::redis_entity::__private::core::result::Result<
            Self,
            ::redis_entity::__private::FieldError,
        > {
            ::redis_entity::__private::core::unimplemented!()
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
const User: () = {
    pub struct name;
    impl ::redis_entity::__private::FieldMarker<0> for User {
        type Marker = name;
    }
    const _: () = {
        struct name;
    };
};
#[allow(dead_code)]
impl User {
    ///Handle of the `name` field (stored as `name`).
    const NAME: ::redis_entity::__private::Field<
        User,
        String,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::NoIndex,
        <User as ::redis_entity::__private::FieldMarker<0>>::Marker,
    > = ::redis_entity::__private::Field::new("name", 0usize);
    ///The entity key for `pk`, without namespace: ``.
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
