// Package gb28181 owns the platform's side of GB/T 28181: the SIP
// registrar every control node runs (UDP and TCP, MD5 digest with the
// platform's domain as realm), device presence from registrations and
// keep-alives, the device.gb28181.* events of contract A, MANSCDP XML
// (GB2312/GBK as devices send it) and the catalog of a device's channels.
//
// Presence is kept where it is cheap: the node holding a device's
// transport remembers when it last heard from it, in memory, and only a
// change of state (registered, offline, recovered, unregistered) is a
// replicated write with its event in the same Txn. A refresh or keep-alive
// that changes nothing writes nothing and emits nothing (contract A,
// delivery rule 7), so 2,000 devices keeping alive every minute cost the
// store nothing.
package gb28181
