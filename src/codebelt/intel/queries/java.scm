; see python.scm for the capture conventions
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.record
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.field
(enum_constant name: (identifier) @name) @definition.constant

(method_invocation name: (identifier) @name) @reference.call
(object_creation_expression type: (type_identifier) @name) @reference.type
(superclass (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type
(field_access field: (identifier) @name) @reference.attribute
(identifier) @name @reference.identifier
