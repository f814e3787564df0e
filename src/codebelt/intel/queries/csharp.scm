; see python.scm for the capture conventions
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.record
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.namespace
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(property_declaration name: (identifier) @name) @definition.field
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(delegate_declaration name: (identifier) @name) @definition.type
(enum_member_declaration name: (identifier) @name) @definition.constant

(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call
(object_creation_expression type: (identifier) @name) @reference.type
(base_list (identifier) @name) @reference.type
(member_access_expression name: (identifier) @name) @reference.attribute
(identifier) @name @reference.identifier
