; see python.scm for the capture conventions
(class_declaration "interface" (type_identifier) @name) @definition.interface
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.object
(function_declaration (simple_identifier) @name) @definition.function
(type_alias (type_identifier) @name) @definition.type
(source_file (property_declaration (variable_declaration (simple_identifier) @name)) @definition.variable)
(class_body (property_declaration (variable_declaration (simple_identifier) @name)) @definition.field)
(class_parameter (simple_identifier) @name) @definition.field

(call_expression (simple_identifier) @name) @reference.call
(call_expression (navigation_expression (navigation_suffix (simple_identifier) @name))) @reference.call
(delegation_specifier (user_type (type_identifier) @name)) @reference.type
(delegation_specifier (constructor_invocation (user_type (type_identifier) @name))) @reference.type
(type_identifier) @name @reference.type
(navigation_suffix (simple_identifier) @name) @reference.attribute
(simple_identifier) @name @reference.identifier
