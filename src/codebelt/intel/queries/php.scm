; see python.scm for the capture conventions
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(namespace_definition name: (namespace_name) @name) @definition.namespace
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
(property_declaration (property_element (variable_name (name) @name))) @definition.field
(const_declaration (const_element (name) @name)) @definition.constant

(function_call_expression function: (name) @name) @reference.call
(function_call_expression function: (qualified_name (name) @name)) @reference.call
(member_call_expression name: (name) @name) @reference.call
(scoped_call_expression name: (name) @name) @reference.call
(object_creation_expression (name) @name) @reference.type
(object_creation_expression (qualified_name (name) @name)) @reference.type
(base_clause (name) @name) @reference.type
(class_interface_clause (name) @name) @reference.type
(named_type (name) @name) @reference.type
(member_access_expression name: (name) @name) @reference.attribute
(name) @name @reference.identifier
