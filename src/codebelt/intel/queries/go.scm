; see python.scm for the capture conventions
(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [(type_identifier) @container (pointer_type (type_identifier) @container) (generic_type type: (type_identifier) @container) (pointer_type (generic_type type: (type_identifier) @container))]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method
(field_declaration name: (field_identifier) @name) @definition.field
; an embedded field (`*Doc`, `ast.Node`) is a field named after its type
(field_declaration !name type: [(type_identifier) @name (qualified_type name: (type_identifier) @name)]) @definition.field
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))
(package_clause (package_identifier) @name) @definition.module

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (selector_expression field: (field_identifier) @name)) @reference.call
(type_identifier) @name @reference.type
(selector_expression field: (field_identifier) @name) @reference.attribute
(identifier) @name @reference.identifier
