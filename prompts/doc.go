// Package prompts holds the worker and supervisor prompts, embedded in the
// binary and rendered with text/template. Files of the same name in a
// roadmap's prompts/ folder or in .claudopilot/prompts/ override them, and a
// <role>.project.md there is appended.
package prompts
