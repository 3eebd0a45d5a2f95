// Package control keeps the switches a human flips while a run goes on —
// pause, and lanes switched off — and the pacer's last result, in files
// under .claudopilot/state. The commands (`claudopilot pause`, `lane off`)
// write them; a running driver watches the folder and reacts within a
// second. They are files, not messages to a process, so the switches
// survive a restart of the driver and work with no driver running.
package control
