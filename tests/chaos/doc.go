// Package chaos is the chaos suite: the real relay, machine environments and pages under faults.
package chaos
