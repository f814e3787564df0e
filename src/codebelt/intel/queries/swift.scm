; see python.scm for the capture conventions
(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(class_declaration declaration_kind: "extension" name: (user_type (type_identifier) @name)) @scope
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(function_declaration name: (simple_identifier) @name) @definition.function
(init_declaration "init" @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type
(source_file (property_declaration name: (pattern (simple_identifier) @name)) @definition.variable)
(class_body (property_declaration name: (pattern (simple_identifier) @name)) @definition.field)

(call_expression (simple_identifier) @name) @reference.call
(call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(inheritance_specifier inherits_from: (user_type (type_identifier) @name)) @reference.type
(type_identifier) @name @reference.type
(navigation_suffix suffix: (simple_identifier) @name) @reference.attribute
(simple_identifier) @name @reference.identifier
