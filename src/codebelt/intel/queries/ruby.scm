; see python.scm for the capture conventions
(class name: (constant) @name) @definition.class
(class name: (scope_resolution name: (constant) @name)) @definition.class
(module name: (constant) @name) @definition.module
(method name: (_) @name) @definition.function
(singleton_method name: (_) @name) @definition.method
(program (assignment left: (constant) @name) @definition.constant)
(class (body_statement (assignment left: (constant) @name) @definition.constant))
(module (body_statement (assignment left: (constant) @name) @definition.constant))

(call method: (identifier) @name) @reference.call
(superclass (constant) @name) @reference.type
(constant) @name @reference.type
(identifier) @name @reference.identifier
