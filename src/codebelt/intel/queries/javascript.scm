; see python.scm for the capture conventions
(class_declaration name: (identifier) @name) @definition.class
(class name: (identifier) @name) @definition.class
(method_definition name: (property_identifier) @name) @definition.method
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(program (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function)))
(program (lexical_declaration (variable_declarator name: (identifier) @name value: (_) @_v) @definition.variable))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable)))
(program (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable))

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (member_expression property: (property_identifier) @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.type
(class_heritage (identifier) @name) @reference.type
(import_specifier name: (identifier) @name) @reference.import
(member_expression property: (property_identifier) @name) @reference.attribute
(identifier) @name @reference.identifier
