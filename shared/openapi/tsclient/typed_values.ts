// Event data and conflict values read and written by type under tsc
// --strict: scripts/typecheck-openapi generates openapi.gen.ts from
// openapi.json and type-checks this file. While the shared envelope
// typed data as an object of no properties, openapi-typescript wrote it as
// Record<string, never> and intersected every event type's data with it:
// each data then had a never index signature (any key read as never, and
// no data but {} could be written, so a client could not build a fixture
// or a value to compare with). Same compares types exactly, because never
// is assignable to anything. It is never run.
import type { components } from "./openapi.gen";

type Schemas = components["schemas"];
type Event = Schemas["Event"];
type Conflict = Schemas["Conflict"];

// Same<A, B> is true only when A and B are the same type (never is not
// number); Assert refuses anything but true.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

type DataOf<T extends Event["type"]> = Extract<Event, { type: T }>["data"];
type ConflictOf<T extends Conflict["type"]> = Extract<Conflict, { type: T }>;

// The keys of O whose type is never.
type NeverKeys<O> = { [K in keyof O]-?: [O[K]] extends [never] ? K : never }[keyof O];

// Every event type's data and every conflict type's values: no field, and
// no index signature, is never.
type EventsUsable = Assert<Same<{ [T in Event["type"]]: NeverKeys<DataOf<T>> }[Event["type"]], never>>;
type ConflictsUsable = Assert<
  Same<
    { [T in Conflict["type"]]: NeverKeys<ConflictOf<T>["service_value"]> | NeverKeys<ConflictOf<T>["channel_value"]> }[Conflict["type"]],
    never
  >
>;
// Narrowing keeps the member: each type names its own data.
type EventNarrows = Assert<Same<Extract<Event, { type: "product.updated" }>["type"], "product.updated">>;

// Field types, exactly.
type EventFields = [
  Assert<Same<DataOf<"product.updated">["revision"], number>>,
  Assert<Same<DataOf<"product.updated">["inventory_item_ids_created"], string[] | undefined>>,
  Assert<Same<DataOf<"inventory_item.adjusted">["version"], number>>,
  Assert<Same<DataOf<"inventory_item.adjusted">["product_id"], string>>,
  Assert<Same<DataOf<"reservation.created">["quantity"], number>>,
  Assert<Same<DataOf<"connection.roles_replaced">["version"], number>>,
  Assert<Same<DataOf<"conflict.opened">["connection_id"], string | null>>,
];
type ConflictFields = [
  Assert<Same<ConflictOf<"stock_mismatch">["service_value"]["reserved"], number>>,
  Assert<Same<ConflictOf<"stock_mismatch">["channel_value"]["on_hand"], number>>,
  Assert<Same<ConflictOf<"price_mismatch">["channel_value"]["variation_id"], string | undefined>>,
  Assert<Same<ConflictOf<"catalog_mismatch">["service_value"]["catalog_status"], "active" | "archived">>,
  Assert<Same<ConflictOf<"authority_fence">["service_value"]["inventory_master_connection_id"], string | null>>,
  Assert<Same<ConflictOf<"authority_fence">["channel_value"]["target_on_hand"], number>>,
];

// A client's fixtures: a value of a member type can be written out. With
// data intersected with Record<string, never>, no data but {} fitted.
export const updated: Extract<Event, { type: "product.updated" }> = {
  id: "evt_1", type: "product.updated", created_at: "2026-01-02T03:04:05Z", vendor_id: "ven_1",
  resource: { type: "product", id: "prd_1" },
  data: { revision: 2, inventory_item_ids_created: ["inv_prd_1_001"] },
  request: null,
};
export const adjusted: Event = {
  id: "evt_2", type: "inventory_item.adjusted", created_at: "2026-01-02T03:04:05Z", vendor_id: "ven_1",
  resource: { type: "inventory_item", id: "inv_prd_1_000" },
  data: { version: 3, product_id: "prd_1" },
  request: { id: "req_1", idempotency_key: "adjust-1" },
};
export const stock: ConflictOf<"stock_mismatch"> = {
  id: "cfl_1", vendor_id: "ven_1", type: "stock_mismatch", connection_id: "conn_1",
  resource: { type: "inventory_item", id: "inv_prd_1_000" },
  service_value: { on_hand: 5, reserved: 4, available: 1 }, channel_value: { on_hand: 2 },
  detail: "on_hand 2 is below the 4 units reserved", source: { type: "sync_job", id: "sjb_1" },
  status: "open", resolution: null, version: 1, created_at: "2026-01-02T03:04:05Z", updated_at: "2026-01-02T03:04:05Z",
};
// @ts-expect-error an adjustment's data has no quantity
export const wrong: DataOf<"inventory_item.adjusted"> = { version: 1, product_id: "prd_1", quantity: 2 };

// What a client writes: switch on type, then read the data.
export function describeEvent(ev: Event): string {
  switch (ev.type) {
    case "product.updated":
      return `product ${ev.resource.id} at revision ${ev.data.revision.toFixed(0)}, ${(ev.data.inventory_item_ids_created ?? []).map((id) => id.toUpperCase()).join(",")}`;
    case "inventory_item.adjusted":
      return `item ${ev.resource.id} v${ev.data.version.toFixed(0)} of ${ev.data.product_id.toUpperCase()}`;
    case "reservation.created":
      return `${ev.data.quantity.toFixed(0)} × ${ev.data.inventory_item_id.trim()}`;
    case "external_order.imported":
      return `${ev.data.external_order_id.trim()}: ${ev.data.lines.length.toFixed(0)} lines, ${ev.data.status}`;
    case "sync_job.completed":
      return `${ev.data.connection_id.trim()} ${ev.data.kind} ${ev.data.status}`;
    case "conflict.opened":
      return `${ev.data.type} on ${ev.data.connection_id ?? "the service"} v${ev.data.version.toFixed(0)}`;
    default:
      return ev.type;
  }
}

export function describeConflict(cf: Conflict): string {
  switch (cf.type) {
    case "stock_mismatch":
      return `on hand ${cf.channel_value.on_hand.toFixed(0)} < reserved ${cf.service_value.reserved.toFixed(0)} (available ${cf.service_value.available.toFixed(0)})`;
    case "price_mismatch":
      return `${cf.service_value.price.toFixed(0)} here, ${cf.channel_value.price.toFixed(0)} there${cf.channel_value.variation_id === undefined ? "" : ` for ${cf.channel_value.variation_id.trim()}`}`;
    case "catalog_mismatch":
      return `${cf.service_value.name.trim()} is ${cf.service_value.catalog_status}, the channel says ${cf.channel_value.catalog_status}`;
    case "unreservable_external_order":
      return Object.entries(cf.service_value.problems).map(([line, why]) => `${line}: ${why}`).join("; ") + ` of ${cf.channel_value.external_order_id.trim()}`;
    case "duplicate_external_id":
      return `${cf.service_value.external_order_id.trim()} had ${cf.service_value.lines.length.toFixed(0)} lines, now ${cf.channel_value.lines.length.toFixed(0)}`;
    case "authority_fence":
      return `${cf.channel_value.authority_connection_id.trim()} asked for ${cf.channel_value.target_on_hand.toFixed(0)}; the source is ${cf.service_value.inventory_master_connection_id ?? "the service"}`;
  }
}

export type Checks = [EventsUsable, ConflictsUsable, EventNarrows, EventFields, ConflictFields];
