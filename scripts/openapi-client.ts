// A typed client's use of the API, type-checked by scripts/openapi-check.sh
// against the types openapi-typescript generates from the served OpenAPI
// document (./api). It compiles only if the document declares what these
// calls rely on; it is never run. It is a user's flow: an entity and its
// records, a filtered list, a rule set executed, a toggle checked, a
// webhook created, signing in.
import createClient from "openapi-fetch";
import type { paths, components } from "./api";

// The answers read are JSON ones (a list's exports have media types of
// their own: files).
const client = createClient<paths, "application/json">({ baseUrl: "http://localhost:8080/api", headers: { "X-Api-Key": "tk_…" } });

export async function main(): Promise<void> {
  // An entity, a record of it: record values are open objects.
  await client.POST("/entities/entities", { body: { entityId: "shop.product", label: "Products" } });
  const created = await client.POST("/entities/records", { body: { entityId: "shop.product", values: { title: "Lamp", price: 24.5 } } });
  if (created.data) console.log(created.data.item);

  // The page of records: its items carry their field values. A list's
  // application/json answer is always the page (exports have media types
  // of their own).
  const item: components["schemas"]["RecordItem"] = { id: "1", createdAt: "", updatedAt: "", title: "Lamp" };
  const title: unknown = item["title"];
  const page = await client.GET("/entities/records", { params: { query: { entityId: "shop.product", sortField: "createdAt", sortDir: "desc" } } });
  for (const it of page.data?.items ?? []) console.log(it.id, it["title"], title);

  // A filtered list: cf_<key> filters are query parameters named after the
  // entity's fields, so they are added to the query string by the caller.
  const filtered = await client.GET("/entities/records", {
    params: { query: { entityId: "shop.product" } },
    querySerializer: (query) => {
      const q = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
      q.set("cf_title", "Lamp");
      return q.toString();
    },
  });
  console.log(filtered.data?.total);

  // Rules: data is an open object; each execute route requires its own fields.
  await client.POST("/business_rules/execute", { body: { entityType: "order", data: { total: 250 } } });
  await client.POST("/business_rules/sets", { body: { id: "ORDER_CHECKS", name: "Order checks" } });
  const run = await client.POST("/business_rules/sets/{setId}/execute", {
    params: { path: { setId: "ORDER_CHECKS" } },
    body: { entityType: "order", entityId: "o-1", eventType: "beforeCreate", data: { total: 250 } },
  });
  console.log(run.data);
  // @ts-expect-error entityId and eventType are missing
  await client.POST("/business_rules/sets/{setId}/execute", { params: { path: { setId: "s" } }, body: { entityType: "order", data: {} } });

  // A feature toggle checked.
  const toggle = await client.GET("/feature_toggles/check/boolean", { params: { query: { identifier: "new-checkout" } } });
  console.log(toggle.data);

  // A webhook for record events; its signing secret comes back once.
  const hook = await client.POST("/webhooks", {
    body: { name: "records", url: "https://example.com/hook", subscribedEvents: ["entities.record.*"] },
  });
  console.log(hook.data);

  // Sign in: the body's fields are declared.
  await client.POST("/login", { body: { email: "a@b.c", password: "x" } });
}
