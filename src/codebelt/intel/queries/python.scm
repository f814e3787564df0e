; Capture conventions (all languages):
;   @definition.KIND  the whole definition node, @name its name
;   @scope            a node that names the container of what is nested in it without being a
;                     symbol itself (its @name is the container name)
;   @container        inside a definition match: the container's name, stated explicitly
;   @reference.KIND   a use of a name, @name the identifier
; A function nested directly in a class-like container is reported as a method.

(class_definition name: (identifier) @name) @definition.class

(function_definition name: (identifier) @name) @definition.function

; module-level and class-level assignments: NAME = ... (constants when upper case)
(module (assignment left: (identifier) @name) @definition.variable)
(module (assignment left: (pattern_list (identifier) @name)) @definition.variable)
(class_definition body: (block (assignment left: (identifier) @name) @definition.field))
; module-level blocks run at import (or as a script, `if __name__ == "__main__":`): what they
; assign are module variables too
(module (if_statement consequence: (block (assignment left: (identifier) @name) @definition.variable)))
(module (if_statement alternative: (else_clause body: (block (assignment left: (identifier) @name) @definition.variable))))
(module (if_statement alternative: (elif_clause consequence: (block (assignment left: (identifier) @name) @definition.variable))))
(module (try_statement body: (block (assignment left: (identifier) @name) @definition.variable)))
(module (try_statement (except_clause (block (assignment left: (identifier) @name) @definition.variable))))
; attributes assigned on `self` in a method: fields of the enclosing class (@self says so)
(assignment left: (attribute object: (identifier) @self attribute: (identifier) @name)
  (#eq? @self "self")) @definition.field

(call function: (identifier) @name) @reference.call
(call function: (attribute attribute: (identifier) @name)) @reference.call
(class_definition superclasses: (argument_list (identifier) @name) @reference.type)
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @name)) @reference.type)
(decorator (identifier) @name) @reference.call
(decorator (attribute attribute: (identifier) @name)) @reference.call
(type (identifier) @name) @reference.type
; a string annotation (`-> "Text"`, `list["Shape"]`) names types too: split into its identifiers
(type (string (string_content) @name)) @reference.type
(import_from_statement name: (dotted_name (identifier) @name) @reference.import)
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name)) @reference.import)
(attribute attribute: (identifier) @name) @reference.attribute
(identifier) @name @reference.identifier
