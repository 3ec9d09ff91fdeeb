// docs/tour.md's tour as a typed client: scripts/typecheck-openapi generates
// openapi.gen.ts from shared/openapi/openapi.json with openapi-typescript
// and type-checks this file with tsc, so a document that stops describing
// a shape a client relies on fails `make test`. It is never run.
import type { components, paths } from "./openapi.gen";

type Schemas = components["schemas"];

// JSON request body and 2xx JSON body of an operation.
type Body<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type Ok<O, S extends number> = O extends { responses: { [K in S]: { content: { "application/json": infer R } } } } ? R : never;
type Problem = Schemas["Problem"];

class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
  }
}

class Client {
  constructor(private readonly base: string, private readonly token: string) {}

  async send<R>(method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<R> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(this.base + path, init);
    if (!res.ok) throw new ApiError((await res.json()) as Problem);
    return (await res.json()) as R;
  }
}

type CreateProduct = paths["/vendors/{vendor_id}/products"]["post"];
type Publish = paths["/vendors/{vendor_id}/products/{product_id}/publish"]["post"];
type ListItems = paths["/vendors/{vendor_id}/inventory-items"]["get"];
type Adjust = paths["/vendors/{vendor_id}/inventory-items/{inventory_item_id}/adjustments"]["post"];
type CreateConnection = paths["/vendors/{vendor_id}/connections"]["post"];
type CreateReservation = paths["/vendors/{vendor_id}/inventory-reservations"]["post"];
type CommitReservation = paths["/vendors/{vendor_id}/inventory-reservations/{reservation_id}/commit"]["post"];
type ListEvents = paths["/vendors/{vendor_id}/events"]["get"];
type ListConflicts = paths["/vendors/{vendor_id}/conflicts"]["get"];
type CreatePairing = paths["/vendors/{vendor_id}/store-pairings"]["post"];
type GetPairing = paths["/vendors/{vendor_id}/store-pairings/{pairing_id}"]["get"];

export async function tour(base: string, token: string, vendor: string): Promise<void> {
  const c = new Client(base, token);
  const v = `/vendors/${vendor}`;

  const shirt: Body<CreateProduct> = {
    kind: "simple", name: "Linen shirt", slug: "linen-shirt", description: "Washed linen.",
    price: 4500, category: "apparel", subcategory: "shirts",
    image_urls: ["https://cdn.example.com/shirt.jpg"], options: {}, features: [],
    related_product_ids: [], weight_kg: 0.3,
  };
  const created = await c.send<Ok<CreateProduct, 201>>("POST", `${v}/products`, shirt, "create-shirt-0001");
  const product: Schemas["Product"] = created.data;
  const draft: "draft" | "published" | "archived" = product.status;

  const publish: Body<Publish> = { expected_revision: product.revision };
  const published = await c.send<Ok<Publish, 200>>("POST", `${v}/products/${product.id}/publish`, publish);
  const revision: number = published.data.revision;

  const items = await c.send<Ok<ListItems, 200>>("GET", `${v}/inventory-items`);
  const item = items.data[0];
  if (item === undefined) throw new Error("a product has an inventory item");
  const adjust: Body<Adjust> = { target_on_hand: 12, expected_version: item.version };
  const adjusted = await c.send<Ok<Adjust, 200>>("POST", `${v}/inventory-items/${item.id}/adjustments`, adjust, "stock-shirt-0001");
  const available: number = adjusted.data.available;

  const conn: Body<CreateConnection> = {
    provider: "store_plugin", external_account_id: "shop-4411", display_name: "Web store", roles: "service_source",
  };
  const connection = (await c.send<Ok<CreateConnection, 201>>("POST", `${v}/connections`, conn, "conn:web-store:1")).data;

  const hold: Body<CreateReservation> = {
    connection_id: connection.id, inventory_item_id: item.id, quantity: 2, expires_in_seconds: 900,
  };
  const reservation = (await c.send<Ok<CreateReservation, 201>>("POST", `${v}/inventory-reservations`, hold, "cart-7731:hold")).data;
  const commit: Body<CommitReservation> = { expected_version: reservation.version };
  const committed = await c.send<Ok<CommitReservation, 200>>("POST", `${v}/inventory-reservations/${reservation.id}/commit`, commit, "cart-7731:commit");
  const status: "active" | "committed" | "released" | "expired" = committed.data.status;

  // Events: data is typed per event type once type narrows it.
  const events = await c.send<Ok<ListEvents, 200>>("GET", `${v}/events?limit=5`);
  for (const ev of events.data) {
    switch (ev.type) {
      case "inventory_item.adjusted": {
        const version: number = ev.data.version;
        const productID: string = ev.data.product_id;
        // @ts-expect-error an adjustment's data has no quantity
        const wrong: number = ev.data.quantity;
        void [version, productID, wrong];
        break;
      }
      case "reservation.committed": {
        const quantity: number = ev.data.quantity;
        void quantity;
        break;
      }
      case "product.published": {
        // @ts-expect-error a product's status is a status, not a number
        const s: number = ev.data.status;
        void s;
        break;
      }
    }
  }

  // Conflicts: the values are typed per conflict type.
  const conflicts = await c.send<Ok<ListConflicts, 200>>("GET", `${v}/conflicts?status=open`);
  for (const cf of conflicts.data) {
    if (cf.type === "stock_mismatch") {
      const reported: number = cf.channel_value.on_hand;
      const reserved: number = cf.service_value.reserved;
      void [reported, reserved];
    } else if (cf.type === "unreservable_external_order") {
      const why: Record<string, string> = cf.service_value.problems;
      void why;
    }
  }

  // The pairing: its creation shows the code; discovery is typed.
  const pairing = (await c.send<Ok<CreatePairing, 201>>("POST", `${v}/store-pairings`, {}, "pair:shop:1")).data;
  const code: string | null = pairing.code;
  const read = (await c.send<Ok<GetPairing, 200>>("GET", `${v}/store-pairings/${pairing.id}`)).data;
  const domain: string | undefined = read.discovery?.store?.domain;
  const productCount: number | undefined = read.discovery?.catalog?.product_count;

  void [draft, revision, available, status, code, domain, productCount];
}
