// Package chaos runs the relay under faults: processes killed, disks full, readers that stop.
package chaos
